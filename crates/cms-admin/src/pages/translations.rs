//! An item's languages on its edit page (docs/translations.md): the switcher, "Translate
//! into …", the outdated notice with the source's changes, and "Mark as up to date".

use actix_web::{HttpResponse, web};
use askama::Template;
use cms_core::collection::Collection;
use cms_core::policy::Principal;
use cms_core::slug::ItemRef;

use super::ItemAt;
use super::links::item_href;
use crate::AdminState;
use crate::auth::{PostedForm, SignedIn};
use crate::error::AdminResult;
use crate::view::{self, Layout, Section};

/// What the edit page shows of an item's languages.
pub(super) struct LanguagesView {
    /// This item's language (the `lang` and `dir` of its fields and preview).
    pub code: String,
    pub dir: &'static str,
    /// Every language of the site, this one's marked.
    pub entries: Vec<LanguageEntry>,
    /// For a translation whose source changed since it was made: the source's language
    /// name and where its changes are shown.
    pub outdated: Option<(String, String)>,
    /// For a translation: where "Mark as up to date" posts.
    pub up_to_date_action: Option<String>,
    /// For a translation: the source's language name and its text, shown beside.
    pub source: Option<(String, String)>,
}

pub(super) struct LanguageEntry {
    pub name: String,
    pub code: String,
    pub current: bool,
    /// The translation's edit page, with its status and whether it is outdated.
    pub href: Option<(String, &'static str, bool)>,
    /// Where "Translate into …" posts, for a language without a translation.
    pub translate_action: Option<String>,
}

/// The languages of the item `filename` of `collection` (`None` on a site without
/// languages).
pub(super) async fn view(
    state: &AdminState,
    principal: &Principal,
    collection: &Collection,
    filename: &str,
) -> Option<LanguagesView> {
    let cms = &state.cms;
    let (languages, language) = (cms.languages()?, collection.language.as_ref()?);
    let info = cms.language_of_file(collection, filename, true)?;
    let here = item_href(collection, filename);
    let entries = languages
        .all()
        .iter()
        .enumerate()
        .map(|(at, l)| {
            let translation = info.translations.iter().find(|t| *t.lang == *l.code);
            let lane = cms.in_language(collection, at);
            LanguageEntry {
                name: l.name.clone(),
                code: l.code.to_string(),
                current: at == language.at,
                href: translation.map(|t| (item_href(lane, &t.filename), t.status, t.outdated)),
                translate_action: (at != language.at && at > 0 && translation.is_none())
                    .then(|| format!("{here}/translate/{}", l.code)),
            }
        })
        .collect();
    let source_name = languages.get(0).name.clone();
    let outdated = info.outdated.filter(|o| *o).map(|_| (source_name.clone(), format!("{here}/source-diff")));
    let source = match language.at {
        0 => None,
        _ => {
            let source = cms.in_language(collection, 0);
            let own = ItemRef::Filename(collection.naming.parse(filename)?);
            let found = cms.counterpart(collection, &own, source).await.ok()??;
            let raw = cms.read_item_source(principal, source, &ItemRef::Filename(found)).await.ok()?;
            Some((source_name, raw.doc.body))
        }
    };
    Some(LanguagesView {
        code: language.code.to_string(),
        dir: languages.get(language.at).dir.as_str(),
        entries,
        up_to_date_action: (language.at > 0).then(|| format!("{here}/translate/{}", language.code)),
        outdated,
        source,
    })
}

/// `POST /admin/collections/{collection}/items/{item}/translate/{lang}`: the item's
/// translation into `lang` made from its source (then its edit page), or, for the item's
/// own language, the translation marked up to date with its source.
pub async fn translate(
    posted: PostedForm,
    path: web::Path<(String, String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item, lang) = path.into_inner();
    let principal = &posted.user.principal;
    let ItemAt { collection, raw, href } = ItemAt::read(&state, principal, &collection, &item).await?;
    let cms = &state.cms;
    let languages =
        cms.languages().ok_or_else(|| cms_core::CoreError::not_found("this site has no languages"))?;
    let at = languages.parse(&lang)?;
    let file = ItemRef::parse(&raw.meta.filename)?;
    let own = collection.language.as_ref().is_some_and(|l| l.at == at);
    let (outcome, _) = cms.translate_item(principal, collection, &file, at, Default::default(), None).await?;
    if own {
        return Ok(view::see_other(&format!("{href}?ok=up-to-date")));
    }
    let lane = cms.in_language(collection, at);
    Ok(view::see_other(&format!("{}?ok=translated", item_href(lane, &outcome.filename))))
}

#[derive(Template)]
#[template(path = "source_diff.html")]
struct SourceDiffPage {
    l: Layout,
    title: String,
    back: String,
    source_lang: String,
    outdated: bool,
    diff: Option<String>,
}

/// `GET /admin/collections/{collection}/items/{item}/source-diff`: what changed in a
/// translation's source since it was made.
pub async fn source_diff(
    user: SignedIn,
    path: web::Path<(String, String)>,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let (collection, item) = path.into_inner();
    let ItemAt { collection, raw, href } = ItemAt::read(&state, &user.principal, &collection, &item).await?;
    let at = collection.language.as_ref().map_or(0, |l| l.at);
    let file = ItemRef::parse(&raw.meta.filename)?;
    let diff = state.cms.source_diff(&user.principal, collection, &file, at).await?;
    let title = raw.doc.fm.get("title").and_then(|t| t.as_str()).unwrap_or(&raw.meta.slug).to_owned();
    view::ok(&SourceDiffPage {
        l: Layout::new(&state, &user, Section::Collection(collection.family())),
        title,
        back: href,
        source_lang: diff.source_lang.to_string(),
        outdated: diff.outdated,
        diff: diff.diff,
    })
}
