//! The language of a read, on a site with `languages:`: `lang=` and `fallback=` from the
//! query, else `Accept-Language`; and the answer's `Content-Language` and `Vary`.

use actix_web::HttpRequest;
use actix_web::HttpResponse;
use actix_web::http::header::{self, HeaderValue};
use cms_core::Cms;
use cms_core::CoreResult;
use cms_core::collection::Collection;
use cms_core::language::Choice;

use crate::query::ByName;

/// What a read asks for (`None` on a site without languages, which reads as before).
/// `query` is the request's query, when the handler parsed it.
pub fn choice(cms: &Cms, req: &HttpRequest, query: &impl ByName) -> CoreResult<Option<Choice>> {
    choose(cms, req, query.value_of("lang"), query.value_of("fallback"))
}

/// [`choice`] of a request whose query the handler does not otherwise read: the two names
/// read from it without a map of every parameter (a single read's hot path), and only on a
/// site with languages.
pub fn choice_of(cms: &Cms, req: &HttpRequest) -> CoreResult<Option<Choice>> {
    if cms.languages().is_none() {
        return Ok(None);
    }
    let query = req.query_string();
    let (lang, fallback) = (crate::query::value(query, "lang"), crate::query::value(query, "fallback"));
    choose(cms, req, lang.as_deref(), fallback.as_deref())
}

fn choose(
    cms: &Cms,
    req: &HttpRequest,
    lang: Option<&str>,
    fallback: Option<&str>,
) -> CoreResult<Option<Choice>> {
    if cms.languages().is_none() {
        return Ok(None);
    }
    let accept = req.headers().get(header::ACCEPT_LANGUAGE).and_then(|value| value.to_str().ok());
    cms.choose_language(lang, accept, fallback)
}

/// The choice of a route that names a folder (`collectionPath`): a folder of one language
/// (translations by folder) answers in its language unless `lang=` names another; a folder
/// that every language shares (by file name) follows the choice.
pub fn of_folder(cms: &Cms, choice: Option<Choice>) -> Option<Choice> {
    let shared =
        cms.languages().is_some_and(|l| l.layout() == cms_core::language::TranslationLayout::Filename);
    choice.filter(|choice| choice.explicit || shared)
}

/// A list's `missing=fr` or `outdated=fr` (one of them), on a site with languages; a site
/// without languages ignores both, as it ignores any other parameter.
pub fn translation_filter(
    cms: &Cms,
    query: &impl ByName,
) -> CoreResult<Option<cms_core::service::TranslationFilter>> {
    use cms_core::service::TranslationFilter;
    let Some(languages) = cms.languages() else { return Ok(None) };
    match (query.value_of("missing"), query.value_of("outdated")) {
        (None, None) => Ok(None),
        (Some(code), None) => Ok(Some(TranslationFilter::Missing(languages.parse_as("missing", code)?))),
        (None, Some(code)) => Ok(Some(TranslationFilter::Outdated(languages.parse_as("outdated", code)?))),
        (Some(_), Some(_)) => Err(cms_core::CoreError::invalid(
            "missing= and outdated= cannot be combined: ask for one, then the other",
        )),
    }
}

/// The language a write names (`?lang=`): the default language's collection without it.
/// A site without languages ignores it, as it always has.
pub fn write_collection<'a>(
    cms: &'a Cms,
    collection: &'a Collection,
    req: &HttpRequest,
) -> CoreResult<&'a Collection> {
    let Some(languages) = cms.languages() else { return Ok(collection) };
    match crate::query::value(req.query_string(), "lang") {
        Some(code) => Ok(cms.in_language(collection, languages.parse(&code)?)),
        None => Ok(collection),
    }
}

/// `Content-Language` of the language asked for (an answer of several collections, all in
/// that language), and `Vary` as [`mark`] says.
pub fn mark_code(response: HttpResponse, cms: &Cms, choice: Option<Choice>) -> HttpResponse {
    match (choice, cms.collections().first()) {
        (Some(choice), Some(first)) => mark(response, cms.in_language(first, choice.requested), Some(choice)),
        _ => response,
    }
}

/// `Content-Language` of the collection that answered, and `Vary: Accept-Language` when
/// the header chose it (a cache must not give a French answer to an English reader).
pub fn mark(response: HttpResponse, served: &Collection, choice: Option<Choice>) -> HttpResponse {
    mark_lang(response, served.language.as_ref().map(|language| &*language.code), choice)
}

/// [`mark`] of an answer in the language `served` (a code of `languages:`).
pub fn mark_lang(mut response: HttpResponse, served: Option<&str>, choice: Option<Choice>) -> HttpResponse {
    let (Some(choice), Some(served)) = (choice, served) else { return response };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(served) {
        headers.insert(header::CONTENT_LANGUAGE, value);
    }
    if !choice.explicit {
        let vary = match headers.get(header::VARY).and_then(|v| v.to_str().ok()) {
            Some(existing) if !existing.is_empty() => format!("{existing}, Accept-Language"),
            _ => "Accept-Language".to_owned(),
        };
        if let Ok(value) = HeaderValue::from_str(&vary) {
            headers.insert(header::VARY, value);
        }
    }
    response
}
