//! Shareable preview links: a token that lets anyone holding it read one item (whatever
//! its status or schedule) until it expires. Nothing is stored per link: the token is
//! `{collection slug}.{expires}.{slug}.{mac}`, the MAC an HMAC-SHA256 (ring) of the first three
//! with the site's preview key. Rotating the key ends every link; renaming or deleting the
//! item ends its links (the slug no longer names it).

use ring::hmac;
use time::OffsetDateTime;

use super::{Cms, ItemView, Principal, Viewer};
use crate::account::Role;
use crate::collection::Collection;
use crate::config::MAX_PREVIEW_TTL_SECS;
use crate::error::{CoreError, CoreResult};
use crate::slug::ItemRef;

/// A new preview link's token and when it stops working.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewLink {
    pub token: String,
    pub expires: OffsetDateTime,
}

impl Cms {
    /// A preview link for an item (editor or above), living `ttl_secs` (default
    /// `previews.ttl_secs`, at most 7 days).
    pub async fn create_preview(
        &self,
        principal: &Principal,
        collection: &Collection,
        item: &str,
        ttl_secs: Option<u64>,
    ) -> CoreResult<PreviewLink> {
        principal.require_role(Role::Editor)?;
        let (keys, default_ttl) = self.preview_keys()?;
        let ttl = ttl_secs.unwrap_or(*default_ttl);
        if !(1..=MAX_PREVIEW_TTL_SECS).contains(&ttl) {
            return Err(CoreError::invalid(format!(
                "ttl_secs must be between 1 and {MAX_PREVIEW_TTL_SECS} (7 days), got {ttl}"
            )));
        }
        let item_ref = ItemRef::parse(item)?;
        let name = self.index(collection).await?.locate(&item_ref).ok_or_else(|| {
            CoreError::not_found(format!("no item {item:?} in collection {:?}", collection.slug))
        })?;
        let expires =
            self.now().replace_nanosecond(0).unwrap_or(self.now()) + time::Duration::seconds(ttl as i64);
        // The collection by its slug, not its position: reordering `cms.yaml` must not
        // point a link at another collection's item.
        let signed = format!("{}.{}.{}", collection.slug, expires.unix_timestamp(), name.slug());
        let key = hmac::Key::new(hmac::HMAC_SHA256, &keys.current().await?);
        let mac = hex::encode(hmac::sign(&key, signed.as_bytes()).as_ref());
        Ok(PreviewLink { token: format!("{signed}.{mac}"), expires })
    }

    /// The item a preview token opens, as the single-item read gives it; `Unauthorized`
    /// for a tampered, expired or foreign token, or one whose item is gone.
    pub async fn read_preview(&self, token: &str) -> CoreResult<ItemView> {
        let refused = || {
            CoreError::Unauthorized("this preview link is not valid: it was changed, made for another site, or revoked (cms previews revoke-all)".into())
        };
        let (signed, mac) = token.rsplit_once('.').ok_or_else(refused)?;
        let mac = hex::decode(mac).map_err(|_| refused())?;
        let (keys, _) = self.preview_keys()?;
        let key = hmac::Key::new(hmac::HMAC_SHA256, &keys.current().await?);
        hmac::verify(&key, signed.as_bytes(), &mac).map_err(|_| refused())?;
        let mut parts = signed.splitn(3, '.');
        let (Some(collection), Some(expires), Some(slug)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(refused());
        };
        let expires: i64 = expires.parse().map_err(|_| refused())?;
        if self.now().unix_timestamp() >= expires {
            return Err(CoreError::Unauthorized("this preview link has expired; ask for a new one".into()));
        }
        let collection = self.collections.iter().find(|c| c.slug == collection).ok_or_else(refused)?;
        match self.read_item(collection, slug, &Viewer::Preview).await {
            Err(CoreError::NotFound(_)) => {
                Err(CoreError::Unauthorized("this preview link's item was renamed or deleted".into()))
            }
            other => other,
        }
    }

    /// Rotates the preview key: every link made before stops working at once.
    pub async fn revoke_previews(&self) -> CoreResult<()> {
        self.preview_keys()?.0.rotate().await
    }

    fn preview_keys(&self) -> CoreResult<&(std::sync::Arc<dyn crate::ports::PreviewKeys>, u64)> {
        self.previews
            .as_ref()
            .ok_or_else(|| CoreError::NotFound("preview links are not set up on this server".into()))
    }
}
