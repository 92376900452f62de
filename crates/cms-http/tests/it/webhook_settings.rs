use actix_web::test::TestRequest;
use cms_core::account::Role;
use cms_core::events::EventKind;
use cms_core::license::License;
use cms_core::policy::Caller;
use cms_core::ports::WebhookInfo;
use serde_json::json;
use time::OffsetDateTime;

use crate::Harness;

const WEBHOOKS: &str = "/cms/settings/webhooks";

async fn with_webhooks() -> Harness {
    let h = Harness::setup().await;
    h.world.webhooks.set(vec![
        WebhookInfo {
            id: "wh_0123456789abcdef".into(),
            url: "https://hooks.example.com/cms".into(),
            events: vec![EventKind::FileCreated, EventKind::UserDeleted],
            enabled: true,
            created_at: OffsetDateTime::from_unix_timestamp(1_767_225_600).unwrap(),
        },
        WebhookInfo {
            id: "wh_fedcba9876543210".into(),
            url: "https://other.example.com/".into(),
            events: vec![EventKind::FileUpdated],
            enabled: false,
            created_at: OffsetDateTime::from_unix_timestamp(1_767_229_200).unwrap(),
        },
    ]);
    h
}

fn get(key: &str) -> TestRequest {
    TestRequest::get().uri(WEBHOOKS).insert_header(("Authorization", format!("Bearer {key}")))
}

#[actix_web::test]
async fn owners_see_the_subscriptions_without_secrets_in_the_editor_shape() {
    let h = with_webhooks().await;
    let reply = h.send(get(&h.owner_key)).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.json(),
        json!({
            "message": "Webhook create, update and delete are not exposed on the REST API yet; manage them with the cms CLI.",
            "webhooks": [
                {"id": "wh_0123456789abcdef", "url": "https://hooks.example.com/cms",
                 "events": ["file.created", "user.deleted"], "enabled": true,
                 "created_at": "2026-01-01T00:00:00Z"},
                {"id": "wh_fedcba9876543210", "url": "https://other.example.com/",
                 "events": ["file.updated"], "enabled": false,
                 "created_at": "2026-01-01T01:00:00Z"},
            ]
        })
    );
    assert!(!String::from_utf8_lossy(&reply.body).contains("secret"));
}

#[actix_web::test]
async fn other_roles_and_licenses_without_webhooks_get_403() {
    let h = with_webhooks().await;
    h.send(get(&h.editor_key)).await.assert_editor_error(403, "owner");
    h.state.cms.add_user(Caller::Operator, "admin@example.com", Role::Admin).await.unwrap();
    let admin_key =
        h.state.cms.create_key(Caller::Operator, "admin@example.com", "t", [9; 32]).await.unwrap().plaintext;
    h.send(get(&admin_key)).await.assert_editor_error(403, "owner");
    h.send(TestRequest::get().uri(WEBHOOKS)).await.assert_editor_error(401, "API key");

    let plan = |features: &[&str]| License {
        licensee: "x".into(),
        features: features.iter().map(|f| (*f).to_owned()).collect(),
        expires_at: None,
        signature: None,
    };
    h.set_license(Some(plan(&["json_api", "theme_customization"]))).await;
    h.send(get(&h.owner_key)).await.assert_editor_error(403, "webhooks");
    h.set_license(Some(plan(&["webhooks"]))).await;
    h.send(get(&h.owner_key)).await.assert_envelope_error(402, "json_api");
}
