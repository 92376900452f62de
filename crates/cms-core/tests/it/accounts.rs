use cms_core::CoreError;
use cms_core::account::Role;
use cms_core::events::{EventData, EventKind};
use cms_core::license::Feature;
use cms_core::testing::MemoryWorld;

#[tokio::test]
async fn keys_authenticate_as_their_user_until_revoked() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    cms.add_user("Ann@Example.com", Role::Admin).await.unwrap();
    let key = cms.create_key("ann@example.com", "ci", [1; 32]).await.unwrap();
    let principal = cms.authenticate(&key.plaintext).await.unwrap();
    assert_eq!((principal.user.email.as_str(), principal.user.role), ("ann@example.com", Role::Admin));
    assert!(principal.require_role(Role::Editor).is_ok());
    assert!(matches!(principal.require_role(Role::Owner), Err(CoreError::Forbidden(_))));

    assert!(cms.keys().await.unwrap().iter().all(|k| k.hash != key.plaintext), "plaintext is never stored");
    cms.revoke_key(&key.record.id).await.unwrap();
    assert!(matches!(cms.authenticate(&key.plaintext).await, Err(CoreError::Unauthorized(_))));
    assert!(matches!(cms.revoke_key(&key.record.id).await, Err(CoreError::NotFound(_))));
}

#[tokio::test]
async fn wrong_key_families_and_unknown_keys_are_unauthorized() {
    let cms = MemoryWorld::new().cms();
    for presented in ["mcp_0123", "secret", "api_0000"] {
        assert!(matches!(cms.authenticate(presented).await, Err(CoreError::Unauthorized(_))), "{presented}");
    }
}

#[tokio::test]
async fn removing_a_user_removes_their_keys_and_emits_events() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    cms.add_user("bob@example.com", Role::Editor).await.unwrap();
    cms.add_user("bob@example.com", Role::Owner).await.unwrap();
    let key = cms.create_key("bob@example.com", "k", [2; 32]).await.unwrap();
    cms.remove_user("bob@example.com").await.unwrap();
    assert!(cms.authenticate(&key.plaintext).await.is_err());
    assert!(cms.keys().await.unwrap().is_empty());
    let kinds: Vec<_> = world.events.take().into_iter().map(|e| (e.kind, e.data)).collect();
    assert_eq!(
        kinds,
        [
            (
                EventKind::UserCreated,
                EventData::User { email: "bob@example.com".into(), role: Some(Role::Editor) }
            ),
            (EventKind::UserUpdated, EventData::User { email: "bob@example.com".into(), role: None }),
            (EventKind::UserDeleted, EventData::User { email: "bob@example.com".into(), role: None }),
        ]
    );
    assert!(matches!(cms.create_key("bob@example.com", "k", [3; 32]).await, Err(CoreError::NotFound(_))));
}

#[tokio::test]
async fn license_features_gate_routes() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    assert!(cms.require_feature(Feature::JsonApi).await.is_ok());
    world.license.set(None);
    assert!(
        cms.require_feature(Feature::JsonApi).await.is_ok(),
        "the loaded license answers until a change is reported"
    );
    world.settle(&cms).await;
    assert!(matches!(cms.require_feature(Feature::JsonApi).await, Err(CoreError::PaymentRequired(_))));
    cms.install_license("licensee: X\nfeatures: [json_api]\n").await.unwrap();
    assert!(cms.require_feature(Feature::JsonApi).await.is_ok());
    assert!(cms.require_feature(Feature::Webhooks).await.is_err());
    assert!(cms.install_license("licensee: X\n").await.is_err());
}
