//! Stream tokens: browsers' `EventSource` cannot send an `Authorization` header, so a key
//! holder makes a short-lived token bound to a stream's filters and puts it in the URL
//! (`GET /cms/events?token=evt_...`). Nothing is stored per token: it is
//! `evt_{hex of its claims}.{mac}`, the MAC an HMAC-SHA256 of [`MAC_CONTEXT`] and the
//! claims with the site's preview key (so `cms previews revoke-all` ends them too). The
//! key it was made with must still exist when a stream opens.

use ring::hmac;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::{Cms, Principal};
use crate::error::{CoreError, CoreResult};
use crate::event_log::EventFilter;
use crate::events::EventKind;
use crate::policy::Operation;

/// How a stream token starts (an API key never does).
pub const STREAM_TOKEN_PREFIX: &str = "evt_";
/// What the MAC covers before the claims: a preview link never verifies as a token.
const MAC_CONTEXT: &[u8] = b"cms stream token 1\n";

/// A new stream token and when it can no longer open a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamToken {
    pub token: String,
    pub expires: OffsetDateTime,
}

/// What a token says: whose key, until when, which events.
#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    #[serde(rename = "k")]
    key_id: String,
    #[serde(rename = "e")]
    expires: i64,
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    collection: Option<String>,
    #[serde(rename = "v", default, skip_serializing_if = "Vec::is_empty")]
    events: Vec<String>,
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    slug: Option<String>,
}

impl Cms {
    /// A token that opens streams with `filter` (narrowed further by a stream's query, never
    /// widened) for `events.token_ttl_secs`. It sees drafts' events when the key may read
    /// drafts.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn create_stream_token(
        &self,
        principal: &Principal,
        filter: &EventFilter,
    ) -> CoreResult<StreamToken> {
        let key = self.stream_token_key().await?;
        let now = self.now();
        let expires = now.replace_nanosecond(0).unwrap_or(now)
            + time::Duration::seconds(self.events_config.token_ttl_secs as i64);
        let claims = Claims {
            key_id: principal.key_id.clone(),
            expires: expires.unix_timestamp(),
            collection: filter.collection.and_then(|c| self.collections.get(c)).map(|c| c.slug.clone()),
            events: filter.kinds.iter().map(|k| k.as_str().to_owned()).collect(),
            slug: filter.slug.clone(),
        };
        let claims = hex::encode(serde_json::to_vec(&claims).expect("claims serialize"));
        let mac = hex::encode(sign(&key, &claims).as_ref());
        Ok(StreamToken { token: format!("{STREAM_TOKEN_PREFIX}{claims}.{mac}"), expires })
    }

    /// The key's user and the filters a stream token opens; `Unauthorized` for a
    /// tampered, expired or foreign token, or one whose key was revoked.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn open_stream_token(&self, token: &str) -> CoreResult<(Principal, EventFilter)> {
        let refused = || {
            CoreError::Unauthorized(
                "this stream token is not valid: it was changed, made for another site, or revoked \
                 (make a new one with POST /cms/events/tokens)"
                    .into(),
            )
        };
        let (claims, mac) =
            token.strip_prefix(STREAM_TOKEN_PREFIX).and_then(|t| t.rsplit_once('.')).ok_or_else(refused)?;
        let mac = hex::decode(mac).map_err(|_| refused())?;
        let key = hmac::Key::new(hmac::HMAC_SHA256, &self.stream_token_key().await?);
        hmac::verify(&key, &[MAC_CONTEXT, claims.as_bytes()].concat(), &mac).map_err(|_| refused())?;
        let claims: Claims = hex::decode(claims)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(refused)?;
        if self.now().unix_timestamp() >= claims.expires {
            return Err(CoreError::Unauthorized(
                "this stream token has expired; make a new one with POST /cms/events/tokens".into(),
            ));
        }
        let record =
            self.ports.keys.list_keys().await?.into_iter().find(|k| k.id == claims.key_id).ok_or_else(
                || CoreError::Unauthorized("the key this stream token was made with was revoked".into()),
            )?;
        let user = self.ports.users.find_user(&record.email).await?.ok_or_else(|| {
            CoreError::Unauthorized("the user of this stream token's key no longer exists".into())
        })?;
        let principal = Principal { user, key_id: record.id, key_name: Some(record.name) };
        let collection = match &claims.collection {
            Some(slug) => Some(self.collection(slug).map_err(|_| refused())?.index),
            None => None,
        };
        let kinds = claims
            .events
            .iter()
            .map(|name| EventKind::parse(name).ok_or_else(refused))
            .collect::<CoreResult<_>>()?;
        let filter = EventFilter {
            collection,
            kinds,
            slug: claims.slug,
            lang: None,
            sees_drafts: crate::policy::may(&principal, Operation::ReadDrafts),
        };
        Ok((principal, filter))
    }

    /// `events:` of `cms.yaml`.
    pub fn events_config(&self) -> &crate::config::EventsConfig {
        &self.events_config
    }

    async fn stream_token_key(&self) -> CoreResult<Vec<u8>> {
        let (keys, _) = self.previews.as_ref().ok_or_else(|| {
            CoreError::NotFound("stream tokens need the preview key store, which this server has not".into())
        })?;
        keys.current().await
    }
}

fn sign(key: &[u8], claims: &str) -> hmac::Tag {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    let mut context = hmac::Context::with_key(&key);
    context.update(MAC_CONTEXT);
    context.update(claims.as_bytes());
    context.sign()
}
