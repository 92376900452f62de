use cms_core::CoreError;
use cms_core::account::Role;
use cms_core::events::EventKind;
use cms_core::policy::Caller;
use cms_core::ports::WebhookInfo;
use cms_core::testing::MemoryWorld;
use time::OffsetDateTime;

fn hook() -> WebhookInfo {
    WebhookInfo {
        id: "wh_0123456789abcdef".into(),
        url: "https://hooks.example.com/cms".into(),
        events: vec![EventKind::FileCreated, EventKind::UserDeleted],
        enabled: true,
        created_at: OffsetDateTime::from_unix_timestamp(1_767_225_600).unwrap(),
    }
}

#[tokio::test]
async fn webhook_settings_need_the_owner_role_and_the_webhooks_feature() {
    let world = MemoryWorld::new();
    world.webhooks.set(vec![hook()]);
    let cms = world.cms();
    for (email, role) in [("o@example.com", Role::Owner), ("a@example.com", Role::Admin)] {
        cms.add_user(Caller::Operator, email, role).await.unwrap();
    }
    let principal = async |email: &str| {
        let key = cms.create_key(Caller::Operator, email, "t", [email.as_bytes()[0]; 32]).await.unwrap();
        cms.authenticate(&key.plaintext).await.unwrap()
    };
    let (owner, admin) = (principal("o@example.com").await, principal("a@example.com").await);

    assert_eq!(cms.webhook_settings(&owner).await.unwrap(), [hook()]);
    assert!(matches!(cms.webhook_settings(&admin).await, Err(CoreError::Forbidden(_))));

    cms.install_license(Caller::Operator, "licensee: X\nfeatures: [json_api]\n").await.unwrap();
    match cms.webhook_settings(&owner).await {
        Err(CoreError::Forbidden(message)) => assert!(message.contains("webhooks"), "{message}"),
        other => panic!("a missing feature on a settings route is Forbidden, got {other:?}"),
    }
}
