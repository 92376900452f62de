//! Preview links on the facade's clock: a link opens until its expiry and not a second
//! after, decided by the `Clock` port (no waiting).

use cms_core::policy::Caller;
use cms_core::testing::fixtures::item;
use std::sync::Arc;

use cms_core::CoreError;
use cms_core::account::Role;
use cms_core::service::NewItem;
use cms_core::service::Ports;
use cms_core::testing::{MemoryPreviewKeys, MemoryWorld, SITE_YAML};
use serde_json::json;

#[tokio::test]
async fn a_preview_link_opens_until_its_expiry_on_the_clock() {
    let world = MemoryWorld::new();
    let ports = Ports { previews: Some(Arc::new(MemoryPreviewKeys::default())), ..world.ports() };
    let cms = world.cms_with_ports(SITE_YAML, ports);
    cms.add_user(Caller::Operator, "ed@example.com", Role::Editor).await.unwrap();
    let key = cms.create_key(Caller::Operator, "ed@example.com", "t", [9; 32]).await.unwrap();
    let editor = cms.authenticate(&key.plaintext).await.unwrap();
    let posts = cms.collection("posts").unwrap().clone();
    let fm = json!({"title": "Secret plan"}).as_object().unwrap().clone();
    let draft = cms
        .create_item(Caller::Operator, &posts, NewItem { fm, body: "Hidden.".into(), ..Default::default() })
        .await
        .unwrap();

    let link = cms.create_preview(&editor, &posts, &item(&draft.slug), Some(60)).await.unwrap();
    assert_eq!(
        cms.read_preview(&link.token).await.unwrap().meta.slug,
        draft.slug.into(),
        "a draft, by its link"
    );
    world.clock.advance(59);
    assert!(cms.read_preview(&link.token).await.is_ok(), "a second before its expiry");
    world.clock.advance(1);
    let expired = cms.read_preview(&link.token).await.unwrap_err();
    assert!(matches!(&expired, CoreError::Unauthorized(m) if m.contains("expired")), "{expired:?}");
}
