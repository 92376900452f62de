//! The benchmark's own requests (start-up polls, probes, writes): a ureq agent, which
//! keeps its connection alive between requests. Statuses are returned, not errors, and
//! bodies are asked for uncompressed, as wrk asks for them.

use std::time::Duration;

use anyhow::Context;

pub struct Client {
    agent: ureq::Agent,
}

impl Client {
    /// Every request fails after `timeout`, whatever the server does.
    pub fn new(timeout: Duration) -> Self {
        let config =
            ureq::Agent::config_builder().timeout_global(Some(timeout)).http_status_as_error(false).build();
        Self { agent: config.into() }
    }

    /// The status and body of `GET url`.
    pub fn get(&self, url: &str) -> anyhow::Result<(u16, String)> {
        let mut response = self
            .agent
            .get(url)
            .header("Accept-Encoding", "identity")
            .call()
            .with_context(|| format!("GET {url}"))?;
        let body = response.body_mut().read_to_string().with_context(|| format!("GET {url}: body"))?;
        Ok((response.status().as_u16(), body))
    }

    /// The status and body of `GET url` with an API key (drafts too).
    pub fn get_with_key(&self, url: &str, key: &str) -> anyhow::Result<(u16, String)> {
        let mut response = self
            .agent
            .get(url)
            .header("Authorization", &format!("Bearer {key}"))
            .header("Accept-Encoding", "identity")
            .call()
            .with_context(|| format!("GET {url}"))?;
        let body = response.body_mut().read_to_string().with_context(|| format!("GET {url}: body"))?;
        Ok((response.status().as_u16(), body))
    }

    /// `PATCH url` with a JSON body and an API key; returns the status and the body.
    pub fn patch_json(&self, url: &str, key: &str, json: &str) -> anyhow::Result<(u16, String)> {
        self.send_json("PATCH", url, key, json)
    }

    pub fn post_json(&self, url: &str, key: &str, json: &str) -> anyhow::Result<(u16, String)> {
        self.send_json("POST", url, key, json)
    }

    fn send_json(&self, method: &str, url: &str, key: &str, json: &str) -> anyhow::Result<(u16, String)> {
        let request = if method == "POST" { self.agent.post(url) } else { self.agent.patch(url) };
        let mut response = request
            .header("Authorization", &format!("Bearer {key}"))
            .header("Content-Type", "application/json")
            .header("Accept-Encoding", "identity")
            .send(json)
            .with_context(|| format!("{method} {url}"))?;
        // Read to the end, so that the connection can carry the next request.
        let body = response.body_mut().read_to_string().with_context(|| format!("{method} {url}: body"))?;
        Ok((response.status().as_u16(), body))
    }
}
