use actix_web::test::TestRequest;
use cms_core::account::Role;
use cms_core::license::License;
use cms_core::policy::Caller;
use serde_json::{Value, json};

use crate::Harness;

fn as_key(key: &str) -> (&'static str, String) {
    ("Authorization", format!("Bearer {key}"))
}

fn put_theme(key: &str, body: Value) -> TestRequest {
    TestRequest::put().uri("/cms/settings/theme").insert_header(as_key(key)).set_json(body)
}

#[actix_web::test]
async fn theme_has_sensible_defaults_and_saves_subsets() {
    let h = Harness::setup().await;
    let reply =
        h.send(TestRequest::get().uri("/cms/settings/theme").insert_header(as_key(&h.owner_key))).await;
    assert_eq!(reply.status, 200);
    let theme = reply.json()["theme"].clone();
    let fields: Vec<&str> = theme.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(fields, cms_core::theme::FIELDS);
    assert_eq!(theme["site_name"], "Test Site");
    assert!(cms_core::theme::is_color(theme["accent_color"].as_str().unwrap()));
    assert!(theme["custom_palette"].is_null() && theme["surface_color"].is_null());

    let reply =
        h.send(put_theme(&h.owner_key, json!({"accent_color": "#ff0066", "surface_color": "#111"}))).await;
    assert_eq!(reply.status, 200);
    let body = reply.json();
    assert_eq!((body["ok"].as_bool(), body["message"].as_str()), (Some(true), Some("Theme saved.")));
    assert_eq!(body["theme"]["accent_color"], "#ff0066");
    assert_eq!(body["theme"]["font_body"], theme["font_body"], "omitted fields stay unchanged");

    let again = h
        .send(TestRequest::get().uri("/cms/settings/theme").insert_header(as_key(&h.owner_key)))
        .await
        .json();
    assert_eq!(again["theme"], body["theme"], "the theme persisted");
    let cleared = h.send(put_theme(&h.owner_key, json!({"surface_color": null}))).await.json();
    assert!(cleared["theme"]["surface_color"].is_null());
}

#[actix_web::test]
async fn theme_validation_names_the_field_and_changes_nothing() {
    let h = Harness::setup().await;
    let before = h
        .send(TestRequest::get().uri("/cms/settings/theme").insert_header(as_key(&h.owner_key)))
        .await
        .json();
    let cases = [
        (json!({"accent_color": "blue"}), "accent_color must be"),
        (json!({"accent_color": "#abc", "logo": "javascript:alert(1)"}), "logo must be"),
        (json!({"colour": "#fff"}), "unknown theme field \"colour\""),
        (json!({"site_name": ""}), "site_name must be"),
        (json!({"custom_palette": "warm"}), "custom_palette must be"),
    ];
    for (body, needle) in cases {
        h.send(put_theme(&h.owner_key, body)).await.assert_editor_error(400, needle);
    }
    let malformed = TestRequest::put()
        .uri("/cms/settings/theme")
        .insert_header(as_key(&h.owner_key))
        .insert_header(("content-type", "application/json"))
        .set_payload("{\"accent_color\": ");
    h.send(malformed).await.assert_editor_error(400, "malformed JSON");
    let after = h
        .send(TestRequest::get().uri("/cms/settings/theme").insert_header(as_key(&h.owner_key)))
        .await
        .json();
    assert_eq!(after, before);
}

#[actix_web::test]
async fn theme_needs_the_owner_and_the_plan_feature() {
    let h = Harness::setup().await;
    h.send(TestRequest::get().uri("/cms/settings/theme")).await.assert_editor_error(401, "API key");
    h.state.cms.add_user(Caller::Operator, "admin@example.com", Role::Admin).await.unwrap();
    let admin =
        h.state.cms.create_key(Caller::Operator, "admin@example.com", "t", [5; 32]).await.unwrap().plaintext;
    for key in [&h.editor_key, &admin] {
        let get = TestRequest::get().uri("/cms/settings/theme").insert_header(as_key(key));
        h.send(get).await.assert_editor_error(403, "needs the owner role");
        h.send(put_theme(key, json!({"accent_color": "#000"})))
            .await
            .assert_editor_error(403, "needs the owner role");
    }
    h.set_license(Some(License {
        licensee: "x".into(),
        features: vec!["json_api".into()],
        expires_at: None,
        signature: None,
    }))
    .await;
    let get = TestRequest::get().uri("/cms/settings/theme").insert_header(as_key(&h.owner_key));
    h.send(get).await.assert_editor_error(403, "theme_customization");
    h.send(put_theme(&h.owner_key, json!({"colour": 1})))
        .await
        .assert_editor_error(403, "theme_customization");
}

#[actix_web::test]
async fn users_listing_is_for_admins_and_owners() {
    let h = Harness::setup().await;
    h.state.cms.add_user(Caller::Operator, "admin@example.com", Role::Admin).await.unwrap();
    let admin =
        h.state.cms.create_key(Caller::Operator, "admin@example.com", "t", [6; 32]).await.unwrap().plaintext;
    for key in [&admin, &h.owner_key] {
        let reply = h.send(TestRequest::get().uri("/cms/settings/users").insert_header(as_key(key))).await;
        assert_eq!(reply.status, 200);
        let body = reply.json();
        assert!(body["message"].as_str().unwrap().contains("not exposed on the REST API"));
        assert_eq!(
            body["users"],
            json!([
                {"email": "owner@example.com", "role": "owner"},
                {"email": "admin@example.com", "role": "admin"},
                {"email": "ed@example.com", "role": "editor"},
            ])
        );
    }
    let editor = TestRequest::get().uri("/cms/settings/users").insert_header(h.bearer());
    h.send(editor).await.assert_editor_error(403, "needs the admin role");
}
