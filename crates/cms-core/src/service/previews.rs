//! Shareable preview links: a token that lets anyone holding it read one item (whatever
//! its status or schedule) until it expires. Nothing is stored per link: the token is
//! `{collection slug}.{issued ms}.{expires}.{slug}.{mac}`, the MAC an HMAC-SHA256 (ring) of
//! [`MAC_CONTEXT`] and the first four with the site's preview key. Rotating the key ends
//! every link. Deleting the item ends its links: the delete is recorded (per item, for as
//! long as a link may live) and a link issued before it opens nothing, so a new item under
//! the same name needs a new link.

use ring::{digest, hmac};
use time::OffsetDateTime;

use super::{Cms, ItemView, Principal, Viewer};
use crate::collection::Collection;
use crate::config::MAX_PREVIEW_TTL_SECS;
use crate::error::{CoreError, CoreResult};
use crate::policy::Operation;
use crate::slug::ItemRef;

/// What the MAC covers before the token's fields: links of an earlier format (which carried
/// no issue time) never verify.
const MAC_CONTEXT: &[u8] = b"cms preview link 2\n";

/// A new preview link's token and when it stops working.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewLink {
    pub token: String,
    pub expires: OffsetDateTime,
}

impl Cms {
    /// A preview link for an item (editor or above), living `ttl_secs` (default
    /// `previews.ttl_secs`, at most 7 days).
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn create_preview(
        &self,
        principal: &Principal,
        collection: &Collection,
        item: &ItemRef,
        ttl_secs: Option<u64>,
    ) -> CoreResult<PreviewLink> {
        self.authorize(principal, Operation::CreatePreview).await?;
        let (keys, default_ttl) = self.preview_keys()?;
        let ttl = ttl_secs.unwrap_or(*default_ttl);
        if !(1..=MAX_PREVIEW_TTL_SECS).contains(&ttl) {
            return Err(CoreError::invalid(format!(
                "ttl_secs must be between 1 and {MAX_PREVIEW_TTL_SECS} (7 days), got {ttl}"
            )));
        }
        let name = self.index(collection).await?.locate(item).ok_or_else(|| {
            CoreError::not_found(format!(
                "no item {:?} in collection {:?}",
                item.to_string(),
                collection.slug
            ))
        })?;
        let now = self.now();
        let expires = now.replace_nanosecond(0).unwrap_or(now) + time::Duration::seconds(ttl as i64);
        // The collection by its slug, not its position: reordering `cms.yaml` must not
        // point a link at another collection's item.
        let signed =
            format!("{}.{}.{}.{}", collection.slug, unix_ms(now), expires.unix_timestamp(), name.slug());
        let mac = hex::encode(sign(&keys.current().await?, &signed).as_ref());
        Ok(PreviewLink { token: format!("{signed}.{mac}"), expires })
    }

    /// The item a preview token opens, as the single-item read gives it; `Unauthorized`
    /// for a tampered, expired or foreign token, or one whose item is gone.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn read_preview(&self, token: &str) -> CoreResult<ItemView> {
        let refused = || {
            CoreError::Unauthorized("this preview link is not valid: it was changed, made for another site, or revoked (cms previews revoke-all)".into())
        };
        let (signed, mac) = token.rsplit_once('.').ok_or_else(refused)?;
        let mac = hex::decode(mac).map_err(|_| refused())?;
        let (keys, _) = self.preview_keys()?;
        let key = hmac::Key::new(hmac::HMAC_SHA256, &keys.current().await?);
        let message = [MAC_CONTEXT, signed.as_bytes()].concat();
        hmac::verify(&key, &message, &mac).map_err(|_| refused())?;
        let mut parts = signed.splitn(4, '.');
        let (Some(collection), Some(issued), Some(expires), Some(slug)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(refused());
        };
        let (issued, expires): (i64, i64) =
            (issued.parse().map_err(|_| refused())?, expires.parse().map_err(|_| refused())?);
        if self.now().unix_timestamp() >= expires {
            return Err(CoreError::Unauthorized("this preview link has expired; ask for a new one".into()));
        }
        let collection = self.collections().iter().find(|c| c.slug == collection).ok_or_else(refused)?;
        let gone = || {
            CoreError::Unauthorized(
                "this preview link's item was renamed or deleted; ask for a new link".into(),
            )
        };
        if keys.item_links_ended(&item_record(collection, slug)).await?.is_some_and(|ended| ended >= issued) {
            return Err(gone());
        }
        // Signed by this site, so a slug; parsed as any item reference is.
        match self.read_item(collection, &ItemRef::parse(slug)?, &Viewer::Preview).await {
            Err(CoreError::NotFound(_)) => Err(gone()),
            other => other,
        }
    }

    /// Ends the preview links to an item that is gone (deleted through the facade, or
    /// seen gone from the store): a later item of the same name is another item. A
    /// failure is logged, not returned: the item is gone already.
    pub(super) async fn end_preview_links(&self, collection: &Collection, slug: &str) {
        let Some((keys, _)) = &self.previews else { return };
        if let Err(error) = keys.end_item_links(&item_record(collection, slug), unix_ms(self.now())).await {
            tracing::warn!(%error, collection = collection.slug, slug, "cannot record that an item's preview links ended");
        }
    }

    /// Rotates the preview key: every link made before stops working at once.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn revoke_previews(&self, caller: impl Into<crate::policy::Caller<'_>>) -> CoreResult<()> {
        self.authorize(caller, Operation::RevokePreviews).await?;
        self.preview_keys()?.0.rotate().await
    }

    /// How long a link lasts when its maker names no time (`previews.ttl_secs`).
    pub fn default_preview_ttl(&self) -> CoreResult<u64> {
        Ok(self.preview_keys()?.1)
    }

    fn preview_keys(&self) -> CoreResult<&(std::sync::Arc<dyn crate::ports::PreviewKeys>, u64)> {
        self.previews
            .as_ref()
            .ok_or_else(|| CoreError::NotFound("preview links are not set up on this server".into()))
    }
}

fn sign(key: &[u8], signed: &str) -> hmac::Tag {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    let mut context = hmac::Context::with_key(&key);
    context.update(MAC_CONTEXT);
    context.update(signed.as_bytes());
    context.sign()
}

fn unix_ms(at: time::OffsetDateTime) -> i64 {
    (at.unix_timestamp_nanos() / 1_000_000) as i64
}

/// The name an item's ended links are recorded under: short, and safe in any store.
fn item_record(collection: &Collection, slug: &str) -> String {
    let item = format!("{}/{slug}", collection.slug);
    hex::encode(&digest::digest(&digest::SHA256, item.as_bytes()).as_ref()[..16])
}
