use cms_core::CoreError;
use cms_core::account::Role;
use cms_core::events::{EventData, EventKind};
use cms_core::license::Feature;
use cms_core::policy::Caller;
use cms_core::testing::MemoryWorld;

#[tokio::test]
async fn keys_authenticate_as_their_user_until_revoked() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    cms.add_user(Caller::Operator, "Ann@Example.com", Role::Admin).await.unwrap();
    let key = cms.create_key(Caller::Operator, "ann@example.com", "ci", [1; 32]).await.unwrap();
    let principal = cms.authenticate(&key.plaintext).await.unwrap();
    assert_eq!((principal.user.email.as_str(), principal.user.role), ("ann@example.com", Role::Admin));
    assert!(principal.require_role(Role::Editor).is_ok());
    assert!(matches!(principal.require_role(Role::Owner), Err(CoreError::Forbidden(_))));

    assert!(
        cms.keys(Caller::Operator).await.unwrap().iter().all(|k| k.hash != key.plaintext),
        "plaintext is never stored"
    );
    cms.revoke_key(Caller::Operator, &key.record.id).await.unwrap();
    assert!(matches!(cms.authenticate(&key.plaintext).await, Err(CoreError::Unauthorized(_))));
    assert!(matches!(cms.revoke_key(Caller::Operator, &key.record.id).await, Err(CoreError::NotFound(_))));
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
    cms.add_user(Caller::Operator, "bob@example.com", Role::Editor).await.unwrap();
    cms.add_user(Caller::Operator, "bob@example.com", Role::Admin).await.unwrap();
    let key = cms.create_key(Caller::Operator, "bob@example.com", "k", [2; 32]).await.unwrap();
    cms.remove_user(Caller::Operator, "bob@example.com").await.unwrap();
    assert!(cms.authenticate(&key.plaintext).await.is_err());
    assert!(cms.keys(Caller::Operator).await.unwrap().is_empty());
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
    assert!(matches!(
        cms.create_key(Caller::Operator, "bob@example.com", "k", [3; 32]).await,
        Err(CoreError::NotFound(_))
    ));
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
    cms.install_license(Caller::Operator, "licensee: X\nfeatures: [json_api]\n").await.unwrap();
    assert!(cms.require_feature(Feature::JsonApi).await.is_ok());
    assert!(cms.require_feature(Feature::Webhooks).await.is_err());
    assert!(cms.install_license(Caller::Operator, "licensee: X\n").await.is_err());
}

#[tokio::test]
async fn passwords_and_sessions_follow_the_user_as_stored() {
    use cms_core::account::{hash_password, verify_password};
    use cms_core::session::{SessionPolicy, Sessions};

    let world = MemoryWorld::new();
    let cms = world.cms();
    let store = std::sync::Arc::new(cms_core::testing::MemorySessionStore::default());
    let sessions = Sessions::new(SessionPolicy::default(), store.clone());
    let hash = hash_password("correct horse", [3; 16]).unwrap();
    assert!(matches!(
        cms.set_password(Caller::Operator, "nobody@example.com", &hash).await,
        Err(CoreError::NotFound(_))
    ));
    cms.add_user(Caller::Operator, "ann@example.com", Role::Editor).await.unwrap();
    assert_eq!(cms.user_credentials("ANN@example.com").await.unwrap().unwrap().1, None, "no password yet");
    assert_eq!(cms.user_credentials("not an email").await.unwrap(), None);
    cms.set_password(Caller::Operator, "ann@example.com", &hash).await.unwrap();

    let (user, stored) = cms.user_credentials("ann@example.com").await.unwrap().unwrap();
    assert!(verify_password(stored.as_deref(), "correct horse"));
    let started = cms.start_session(&sessions, &user, stored.as_deref(), [1; 32], [2; 32]).await.unwrap();
    let (principal, session) = cms.resume_session(&sessions, &started.token).await.unwrap().unwrap();
    assert_eq!((principal.user.role, principal.key_id.as_str()), (Role::Editor, "session"));
    assert_eq!(session.csrf, started.session.csrf);

    cms.add_user(Caller::Operator, "ann@example.com", Role::Owner).await.unwrap();
    let (principal, _) = cms.resume_session(&sessions, &started.token).await.unwrap().unwrap();
    assert_eq!(principal.user.role, Role::Owner, "a new role counts at once; the password stays");

    cms.set_password(
        Caller::Operator,
        "ann@example.com",
        &hash_password("another password", [4; 16]).unwrap(),
    )
    .await
    .unwrap();
    assert!(cms.resume_session(&sessions, &started.token).await.unwrap().is_none(), "a new password ends it");
    assert!(store.is_empty(), "and it is removed");

    let (user, stored) = cms.user_credentials("ann@example.com").await.unwrap().unwrap();
    let again = cms.start_session(&sessions, &user, stored.as_deref(), [5; 32], [6; 32]).await.unwrap();
    // (Another owner first: the only owner cannot be removed.)
    cms.add_user(Caller::Operator, "own@example.com", Role::Owner).await.unwrap();
    cms.remove_user(Caller::Operator, "ann@example.com").await.unwrap();
    assert!(cms.resume_session(&sessions, &again.token).await.unwrap().is_none(), "removal ends it");
    cms.add_user(Caller::Operator, "ann@example.com", Role::Editor).await.unwrap();
    assert_eq!(
        cms.user_credentials("ann@example.com").await.unwrap().unwrap().1,
        None,
        "the password went too"
    );
}

/// The site always keeps an owner, whoever asks (the editor, the CLI): the only owner can
/// be neither removed nor given a lower role, until another user is an owner.
#[tokio::test]
async fn the_only_owner_can_be_neither_removed_nor_demoted() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    cms.add_user(Caller::Operator, "own@example.com", Role::Owner).await.unwrap();
    cms.add_user(Caller::Operator, "ed@example.com", Role::Editor).await.unwrap();
    for refused in [
        cms.remove_user(Caller::Operator, "OWN@example.com").await.map(|_| ()),
        cms.add_user(Caller::Operator, "own@example.com", Role::Admin).await.map(|_| ()),
    ] {
        let Err(CoreError::Invalid(message)) = refused else { panic!("{refused:?}") };
        assert_eq!(message, "own@example.com is the only owner; make another user an owner first");
    }
    assert_eq!(cms.users(Caller::Operator).await.unwrap().len(), 2, "nothing changed");
    // Others come and go as before; with a second owner, the first may step down.
    cms.remove_user(Caller::Operator, "ed@example.com").await.unwrap();
    cms.add_user(Caller::Operator, "two@example.com", Role::Owner).await.unwrap();
    cms.add_user(Caller::Operator, "own@example.com", Role::Editor).await.unwrap();
    assert!(cms.remove_user(Caller::Operator, "two@example.com").await.is_err(), "now two@ is the only one");
    cms.remove_user(Caller::Operator, "own@example.com").await.unwrap();
}

#[tokio::test]
async fn webhook_management_needs_the_owner_and_the_feature() {
    let world = MemoryWorld::new();
    let cms = world.cms();
    cms.add_user(Caller::Operator, "ed@example.com", Role::Editor).await.unwrap();
    cms.add_user(Caller::Operator, "own@example.com", Role::Owner).await.unwrap();
    let editor = cms
        .authenticate(
            &cms.create_key(Caller::Operator, "ed@example.com", "k", [7; 32]).await.unwrap().plaintext,
        )
        .await
        .unwrap();
    let owner = cms
        .authenticate(
            &cms.create_key(Caller::Operator, "own@example.com", "k", [8; 32]).await.unwrap().plaintext,
        )
        .await
        .unwrap();
    assert!(matches!(
        cms.add_webhook(&editor, "https://x.example/h", "file.created").await,
        Err(CoreError::Forbidden(_))
    ));
    assert!(matches!(cms.clear_webhook_log(&editor).await, Err(CoreError::Forbidden(_))));
    // The memory directory is read-only: the call reaches it and is refused there.
    assert!(matches!(
        cms.add_webhook(&owner, "https://x.example/h", "file.created").await,
        Err(CoreError::Invalid(_))
    ));
    assert_eq!(cms.webhook_log(&owner).await.unwrap(), Vec::new());
    world.license.set(Some(cms_core::license::License {
        licensee: "No webhooks".into(),
        features: vec!["json_api".into()],
        expires_at: None,
        signature: None,
    }));
    world.settle(&cms).await;
    assert!(matches!(cms.remove_webhook(&owner, "wh_1").await, Err(CoreError::Forbidden(_))));
}
