//! The one policy on every surface: operations × roles × surfaces (the REST API over real
//! HTTP, the MCP tools, the web editor's pages, the command line), each answer compared
//! with what `cms_core::policy`'s table says, with the full license and again with one
//! that lacks the plan features of the table. A refusal is the same kind everywhere: `403`
//! naming the missing role, else the missing feature.

use std::path::Path;

use cms_core::account::Role;
use cms_core::license::Feature;
use cms_core::policy::Operation;
use serde_json::{Value, json};

use crate::admin::{PASSWORD, Tab, user_with_password};
use crate::mcp::{Raw, mcp_key};
use crate::{Server, cms, demo_site, error_of, poll, stdout};

/// How a surface asks for an operation: a request that does it, or looks at it without
/// changing anything where the surface allows.
enum Probe {
    /// Method, path, JSON body: with the role's `api_` key.
    Rest(&'static str, &'static str, Option<Value>),
    /// A page of the web editor, signed in as the role's user.
    Editor(&'static str),
    /// A tool and its arguments, with the role's `mcp_` key.
    Mcp(&'static str, Value),
    /// A command, as the machine's operator.
    Cli(&'static [&'static str]),
}

/// The operations each surface offers, a handful per surface that covers every role
/// boundary (editor, admin, owner) and both plan features of the table.
fn probes() -> Vec<(Operation, Probe)> {
    use Operation::*;
    use Probe::*;
    vec![
        (ReadDrafts, Rest("GET", "/cms/collections/blog-posts/items?status=all", None)),
        (ReadDrafts, Rest("GET", "/cms/collections/blog-posts/items/hello-world/raw", None)),
        (
            CreatePreview,
            Rest("POST", "/cms/collections/blog-posts/items/hello-world/preview", Some(json!({}))),
        ),
        (ReadHistory, Rest("GET", "/cms/collections/blog-posts/items/hello-world/versions", None)),
        (UpdateItem, Rest("PATCH", "/cms/collections/blog-posts/items/hello-world", Some(json!({"fm": {}})))),
        (ListUsers, Rest("GET", "/cms/settings/users", None)),
        (EditTheme, Rest("GET", "/cms/settings/theme", None)),
        (ManageWebhooks, Rest("GET", "/cms/settings/webhooks", None)),
        (ReadDrafts, Editor("/admin/collections/blog-posts")),
        (ListUsers, Editor("/admin/users")),
        (ManageUsers, Editor("/admin/users/remove?email=nobody%40example.com")),
        (ManageKeys, Editor("/admin/keys")),
        (ManageWebhooks, Editor("/admin/webhooks")),
        (EditTheme, Editor("/admin/theme")),
        (ReadDrafts, Mcp("list_items", json!({"collection": "blog-posts", "status": "all"}))),
        (ReadDrafts, Mcp("get_item", json!({"collection": "blog-posts", "slug": "hello-world"}))),
        (ReadHistory, Mcp("list_versions", json!({"collection": "blog-posts", "slug": "hello-world"}))),
        (
            UpdateItem,
            Mcp("update_item", json!({"collection": "blog-posts", "slug": "hello-world", "fm": {}})),
        ),
        (ListUsers, Cli(&["users", "list"])),
        (ManageKeys, Cli(&["keys", "list"])),
        (ManageWebhooks, Cli(&["webhooks", "list"])),
    ]
}

/// What a surface answered, reduced to what the table decides.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Allowed,
    /// Refused as `Forbidden`; the words must name this (a role or a feature).
    Forbidden(String),
}

/// What the table says `role` (`None`: the operator) gets, with a license of `features`.
fn expected(operation: Operation, role: Option<Role>, features: &[Feature]) -> Outcome {
    let Some(role) = role else { return Outcome::Allowed };
    let rule = operation.rule();
    match rule.role {
        None => Outcome::Forbidden("operator".into()),
        Some(least) if role < least => Outcome::Forbidden(format!("needs the {least} role")),
        _ => match rule.feature {
            Some(feature) if !features.contains(&feature) => Outcome::Forbidden(feature.as_str().to_owned()),
            _ => Outcome::Allowed,
        },
    }
}

/// One role's ways in: its REST key, its MCP session, its signed-in editor tab.
struct Member<'a> {
    role: Role,
    api_key: String,
    mcp: Raw<'a>,
    session: String,
    tab: Tab<'a>,
}

/// A refusal's words, checked to name `why`; anything but an allow or a `403` is a failure.
fn outcome(allowed: bool, forbidden: bool, message: &str, context: &str) -> Outcome {
    match (allowed, forbidden) {
        (true, _) => Outcome::Allowed,
        (_, true) => Outcome::Forbidden(message.to_owned()),
        _ => panic!("{context}: neither allowed nor forbidden: {message}"),
    }
}

fn ask(server: &Server, site: &Path, member: Option<&mut Member<'_>>, probe: &Probe) -> Option<Outcome> {
    match (probe, member) {
        (Probe::Rest(method, path, body), Some(member)) => {
            let url = format!("{}{path}", server.base);
            let auth = format!("Bearer {}", member.api_key);
            let response = match (*method, body) {
                ("GET", None) => server.agent.get(&url).header("Authorization", &auth).call(),
                ("POST", Some(body)) => server
                    .agent
                    .post(&url)
                    .header("Authorization", &auth)
                    .header("Content-Type", "application/json")
                    .send(body.to_string()),
                ("PATCH", Some(body)) => server
                    .agent
                    .patch(&url)
                    .header("Authorization", &auth)
                    .header("Content-Type", "application/json")
                    .send(body.to_string()),
                other => unreachable!("{other:?}"),
            };
            let mut response = response.unwrap();
            let status = response.status().as_u16();
            let body = response.body_mut().read_to_string().unwrap_or_default();
            Some(outcome(
                (200..300).contains(&status),
                status == 403,
                &body,
                &format!("{method} {path}: {status}"),
            ))
        }
        (Probe::Editor(path), Some(member)) => {
            let answer = member.tab.get(path);
            Some(outcome(
                answer.status == 200,
                answer.status == 403,
                &answer.body,
                &format!("{path}: {}", answer.status),
            ))
        }
        (Probe::Mcp(tool, arguments), Some(member)) => {
            let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}});
            let answer = member.mcp.post(Some(&member.session), Some("2025-06-18"), &call.to_string());
            assert_eq!(answer.status, 200, "{tool}: {}", answer.body);
            let result = &answer.message()["result"];
            let failed = result["isError"].as_bool().unwrap_or(false);
            let message = result["content"][0]["text"].as_str().unwrap_or_default();
            let forbidden = failed && (message.contains("needs the") || message.contains("operator"));
            Some(outcome(!failed, forbidden, message, tool))
        }
        (Probe::Cli(args), None) => {
            let output = cms(site, args);
            let message = error_of(site, &output);
            Some(outcome(output.status.success(), !message.is_empty(), &message, &args.join(" ")))
        }
        _ => None,
    }
}

/// Asks every probe as every role (and the CLI as the operator) and compares each answer
/// with the table.
fn check_matrix(server: &Server, site: &Path, members: &mut [Member<'_>], features: &[Feature]) {
    let mut asked = 0;
    for (operation, probe) in probes() {
        let mut cases: Vec<Option<&mut Member<'_>>> = members.iter_mut().map(Some).collect();
        cases.push(None);
        for member in cases {
            let role = member.as_ref().map(|m| m.role);
            let Some(got) = ask(server, site, member, &probe) else { continue };
            asked += 1;
            let context = format!("{operation:?} as {role:?} with {features:?}");
            match (expected(operation, role, features), got) {
                (Outcome::Allowed, Outcome::Allowed) => {}
                (Outcome::Forbidden(why), Outcome::Forbidden(message)) => {
                    assert!(message.contains(&why), "{context}: refused, but not for {why:?}: {message}")
                }
                (want, got) => panic!("{context}: the table says {want:?}, the surface answered {got:?}"),
            }
        }
    }
    assert_eq!(asked, 3 * 18 + 3, "every probe asked on its surface");
}

#[test]
fn every_surface_follows_the_one_policy_table() {
    let site = demo_site();
    let roles = [
        (Role::Owner, "owner@example.com"),
        (Role::Admin, "admin@example.com"),
        (Role::Editor, "ed@example.com"),
    ];
    let mut keys = Vec::new();
    for (role, email) in roles {
        user_with_password(site.path(), email, role.as_str());
        let output = cms(site.path(), &["keys", "create", "--user", email]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        keys.push((stdout(&output).lines().last().unwrap().to_owned(), mcp_key(site.path(), email)));
    }
    let server = Server::start(site.path());
    let mut members: Vec<Member<'_>> = roles
        .iter()
        .zip(keys)
        .map(|(&(role, email), (api_key, mcp_key))| {
            let mcp = Raw { server: &server, key: mcp_key };
            let session = mcp.open();
            let mut tab = Tab::new(&server);
            assert_eq!(tab.sign_in(email, PASSWORD).status, 303, "{email} signs in");
            Member { role, api_key, mcp, session, tab }
        })
        .collect();

    check_matrix(&server, site.path(), &mut members, &Feature::ALL);

    // A license without the table's plan features, installed by the operator.
    let license = site.path().join("no-extras.yaml");
    std::fs::write(&license, "licensee: Demo\nfeatures: [json_api, mcp]\n").unwrap();
    let installed = cms(site.path(), &["license", "install", license.to_str().unwrap()]);
    assert!(installed.status.success(), "{}", error_of(site.path(), &installed));
    let owner_key = members[0].api_key.clone();
    poll(|| server.get("/cms/settings/theme", Some(&owner_key)).0, |status| *status == 403);
    check_matrix(&server, site.path(), &mut members, &[Feature::JsonApi, Feature::Mcp]);
}
