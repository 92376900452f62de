//! Media: browse the resource folders, upload (form or drag and drop, streamed to the
//! store), rename, move, delete, new folders; each file's URL and Markdown to copy into a
//! post (an image's at a chosen size: `media_library.rs`).

use actix_multipart::{Field, Multipart};
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use askama::Template;
use cms_core::resource::{FileName, ResourceRef, Subpath, sanitize_upload_name};
use cms_core::service::{ResourceFile, parse_folder_index};
use cms_core::session::same_secret;
use cms_core::upload::{self, UploadFailed};
use futures_util::StreamExt;
use serde_json::json;

use super::{ConfirmPage, query_param};
use crate::AdminState;
use crate::auth::{self, PostedForm, SignedIn};
use crate::error::{AdminError, AdminResult, message_of};
use crate::media_library::{self, SizeChoice};
use crate::view::{self, Layout, Section, query_escape};

/// Largest text field of an upload form.
const MAX_TEXT_FIELD: usize = 2048;

fn media_href(folder: usize, path: &str) -> String {
    format!("/admin/media?folder={folder}&path={}", query_escape(path))
}

struct FolderTab {
    label: String,
    href: String,
    current: bool,
}

struct FileRow {
    name: String,
    url: String,
    size: String,
    modified: crate::readable::Moment,
    is_image: bool,
    /// An image's tile: a small variant, not the original.
    thumb: String,
    /// What a file that is not an image shows instead of a thumbnail: its extension.
    kind: String,
    delete_href: String,
    /// The presets' variants (`images.presets`).
    variants: Vec<VariantRow>,
    /// What puts it into a post: `![alt](url)` of an image, `[name](url)` of another file.
    markdown: String,
    /// An image's sizes to choose from for its Markdown (empty for other files).
    sizes: Vec<SizeChoice>,
}

/// One preset's variant of an image, as the media library shows it.
struct VariantRow {
    name: String,
    url: String,
    /// `320 × 320`, or empty when the source's header could not be read.
    dimensions: String,
    /// Its size, or that it is still being made.
    size: String,
}

fn variant_rows(file: &ResourceFile) -> Vec<VariantRow> {
    file.variants
        .iter()
        .map(|v| VariantRow {
            name: v.name.clone(),
            url: v.url.clone(),
            dimensions: match (v.width, v.height) {
                (Some(w), Some(h)) => format!("{w} × {h}"),
                _ => String::new(),
            },
            size: v.size.map_or_else(|| "being made".to_owned(), view::size),
        })
        .collect()
}

struct DirRow {
    name: String,
    href: String,
    delete_href: String,
}

#[derive(Template)]
#[template(path = "media.html")]
struct MediaPage {
    l: Layout,
    tabs: Vec<FolderTab>,
    folder: usize,
    folder_label: String,
    path: String,
    crumbs: Vec<(String, String)>,
    dirs: Vec<DirRow>,
    files: Vec<FileRow>,
    upload_limit: String,
}

/// `GET /admin/media?folder=&path=`
pub async fn browse(
    user: SignedIn,
    req: HttpRequest,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let folder_param = query_param(&req, "folder");
    let path = query_param(&req, "path").unwrap_or_default();
    let folder = parse_folder_index(folder_param.as_deref())?;
    let listing = state.cms.list_resources(&user.principal, folder, &Subpath::parse(&path)?).await?;
    let folder = listing.folder.index;
    let here = listing.subpath.clone();
    let delete_href = |name: &str| {
        format!(
            "/admin/media/delete?folder={folder}&path={}&file={}",
            query_escape(&here),
            query_escape(name)
        )
    };
    let mut crumbs = vec![(listing.folder.label.clone(), media_href(folder, ""))];
    let mut walked = String::new();
    for part in here.split('/').filter(|p| !p.is_empty()) {
        if !walked.is_empty() {
            walked.push('/');
        }
        walked.push_str(part);
        crumbs.push((part.to_owned(), media_href(folder, &walked)));
    }
    let child = |name: &str| if here.is_empty() { name.to_owned() } else { format!("{here}/{name}") };
    let dirs = listing
        .dirs
        .iter()
        .map(|name| DirRow {
            name: name.clone(),
            href: media_href(folder, &child(name)),
            delete_href: delete_href(name),
        })
        .collect();
    let files = listing
        .files
        .iter()
        .map(|f| FileRow {
            name: f.name.clone(),
            url: f.url.clone(),
            size: view::size(f.size),
            modified: crate::readable::Moment::unix(f.modified),
            is_image: f.is_image,
            thumb: media_library::thumbnail_url(f, &state.cms.images().sizes),
            kind: f.name.rsplit_once('.').map_or("FILE".to_owned(), |(_, ext)| ext.to_uppercase()),
            delete_href: delete_href(&f.name),
            variants: variant_rows(f),
            markdown: if f.is_image {
                media_library::image_markdown(&media_library::alt_of(&f.name), &f.url)
            } else {
                media_library::link_markdown(&f.name, &f.url)
            },
            sizes: if f.is_image {
                media_library::size_choices(f, &state.cms.images().sizes)
            } else {
                Vec::new()
            },
        })
        .collect();
    let tabs = state
        .cms
        .resource_folders()
        .iter()
        .map(|f| FolderTab {
            label: f.label.clone(),
            href: media_href(f.index, ""),
            current: f.index == folder,
        })
        .collect();
    let l = Layout::new(&state, &user, Section::Media).with_notice(query_param(&req, "ok").as_deref());
    view::ok(&MediaPage {
        l,
        tabs,
        folder,
        folder_label: listing.folder.label.clone(),
        path: here,
        crumbs,
        dirs,
        files,
        upload_limit: view::size(state.upload_limit),
    })
}

/// `POST /admin/media/upload` (multipart: `csrf` first, then `folder`, `path`, and one or
/// more `file` parts). Scripts asking for JSON get the stored files (or the error) as
/// JSON; a plain form is sent back to the folder.
pub async fn upload(
    user: SignedIn,
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AdminState>,
) -> HttpResponse {
    let wants_json = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"));
    match receive(&user, &req, payload, &state).await {
        Ok((_, _, stored)) if wants_json => HttpResponse::Ok().json(
            stored
                .iter()
                .map(|f| {
                    let variants: Vec<_> = f
                        .variants
                        .iter()
                        .map(|v| json!({"name": v.name, "url": v.url, "width": v.width, "height": v.height, "size": v.size}))
                        .collect();
                    let thumb = f.is_image.then(|| media_library::thumbnail_url(f, &state.cms.images().sizes));
                    json!({"name": f.name, "url": f.url, "size": f.size, "is_image": f.is_image, "thumb": thumb, "variants": variants})
                })
                .collect::<Vec<_>>(),
        ),
        Ok((folder, path, _)) => view::see_other(&format!("{}&ok=uploaded", media_href(folder, &path))),
        Err(error) if wants_json => {
            let message = match &error {
                AdminError::Core(core) => message_of(core),
                other => other.to_string(),
            };
            HttpResponse::build(error.status_code()).json(json!({ "error": message }))
        }
        Err(error) => error.error_response(),
    }
}

/// Receives the files of an upload form; returns where they went and what was stored.
async fn receive(
    user: &SignedIn,
    req: &HttpRequest,
    payload: web::Payload,
    state: &AdminState,
) -> AdminResult<(usize, String, Vec<ResourceFile>)> {
    auth::require_same_origin(req)?;
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !content_type.to_ascii_lowercase().starts_with("multipart/form-data") {
        return Err(AdminError::bad_request("send uploads as multipart/form-data, as the media page does"));
    }
    let limit = state.upload_limit;
    let mut form = Multipart::new(req.headers(), payload);
    let (mut csrf_checked, mut folder, mut path) = (false, None::<String>, String::new());
    let mut stored = Vec::new();
    while let Some(field) = form.next().await {
        let mut field =
            field.map_err(|e| AdminError::bad_request(format!("the upload form is malformed: {e}")))?;
        let name = field.name().unwrap_or_default().to_owned();
        match name.as_str() {
            "csrf" => {
                let token = text_field(&mut field).await?;
                if !same_secret(&token, &user.session.csrf) {
                    return Err(AdminError::Csrf);
                }
                csrf_checked = true;
            }
            // The token comes first: nothing is received before it is checked.
            _ if !csrf_checked => return Err(AdminError::Csrf),
            "folder" => folder = Some(text_field(&mut field).await?),
            "path" => path = text_field(&mut field).await?,
            "file" => {
                let filename =
                    field.content_disposition().and_then(|d| d.get_filename()).unwrap_or("").to_owned();
                if filename.is_empty() {
                    // A file input left empty still sends an empty part.
                    while field.next().await.is_some() {}
                    continue;
                }
                let upload = upload::receive(&state.cms, &user.principal, limit, &mut field).await.map_err(
                    |failed| match failed {
                        UploadFailed::CutOff(e) => AdminError::bad_request(upload::cut_off_message(e)),
                        UploadFailed::Refused(e) => AdminError::from(e),
                    },
                )?;
                let index = parse_folder_index(folder.as_deref())?;
                let (dir, name) = (Subpath::parse(&path)?, sanitize_upload_name(&filename)?);
                let file =
                    state.cms.finish_upload(upload, &ResourceRef::new(index, dir.clone(), name)).await?;
                // The presets are made after the answer, on the image workers.
                if let Some(job) = upload::presets_later(state.cms.clone(), index, dir, &file) {
                    actix_web::rt::spawn(job);
                }
                stored.push(file);
            }
            other => return Err(AdminError::bad_request(format!("unknown form field {other:?}"))),
        }
    }
    if !csrf_checked {
        return Err(AdminError::Csrf);
    }
    if stored.is_empty() {
        return Err(AdminError::bad_request("choose a file to upload"));
    }
    let folder = state.cms.resource_folder_at(parse_folder_index(folder.as_deref())?)?.index;
    Ok((folder, path, stored))
}

async fn text_field(field: &mut Field) -> AdminResult<String> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.next().await {
        let chunk =
            chunk.map_err(|e| AdminError::bad_request(format!("the upload form is malformed: {e}")))?;
        if bytes.len() + chunk.len() > MAX_TEXT_FIELD {
            return Err(AdminError::bad_request("a text field of the upload form is too long"));
        }
        bytes.extend_from_slice(&chunk);
    }
    String::from_utf8(bytes)
        .map_err(|_| AdminError::bad_request("a field of the upload form is not UTF-8 text"))
}

/// The folder and subpath a media form acts in.
fn place(posted: &PostedForm, state: &AdminState) -> AdminResult<(usize, String)> {
    let folder = state.cms.resource_folder_at(parse_folder_index(posted.fields.get("folder"))?)?.index;
    Ok((folder, posted.fields.text("path").to_owned()))
}

/// `POST /admin/media/rename` (`folder`, `path`, `file`, `new_name`)
pub async fn rename(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    let (folder, path) = place(&posted, &state)?;
    let file = posted.fields.required("file", "The file")?;
    let new_name = posted.fields.required("new_name", "The new name")?;
    let (dir, file, new_name) = (Subpath::parse(&path)?, FileName::parse(file)?, FileName::parse(new_name)?);
    state
        .cms
        .rename_resource(&posted.user.principal, &ResourceRef::new(folder, dir, file), &new_name)
        .await?;
    Ok(view::see_other(&format!("{}&ok=renamed", media_href(folder, &path))))
}

/// `POST /admin/media/move` (`folder`, `path`, `file`, `dest`: a subfolder path, empty for
/// the top)
pub async fn move_file(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    let (folder, path) = place(&posted, &state)?;
    let file = posted.fields.required("file", "The file")?;
    let dest = posted.fields.text("dest").trim().trim_matches('/');
    let (dir, file, dest) = (Subpath::parse(&path)?, FileName::parse(file)?, Subpath::parse(dest)?);
    state
        .cms
        .move_resource(&posted.user.principal, &ResourceRef::new(folder, dir, file), &dest, None)
        .await?;
    Ok(view::see_other(&format!("{}&ok=moved", media_href(folder, &path))))
}

/// `GET /admin/media/delete?folder=&path=&file=`
pub async fn confirm_delete(
    user: SignedIn,
    req: HttpRequest,
    state: web::Data<AdminState>,
) -> AdminResult<HttpResponse> {
    let folder =
        state.cms.resource_folder_at(parse_folder_index(query_param(&req, "folder").as_deref())?)?.index;
    let path = query_param(&req, "path").unwrap_or_default();
    let file = query_param(&req, "file")
        .filter(|f| !f.is_empty())
        .ok_or_else(|| AdminError::bad_request("name the file to delete"))?;
    let shown = if path.is_empty() { file.clone() } else { format!("{path}/{file}") };
    view::ok(&ConfirmPage {
        l: Layout::new(&state, &user, Section::Media),
        heading: format!("Delete {file}?"),
        message: format!(
            "{shown} will be deleted for good (a folder only when it is empty). Pages that show it will miss it."
        ),
        action: "/admin/media/delete".into(),
        fields: vec![("folder", folder.to_string()), ("path", path.clone()), ("file", file)],
        button: "Delete",
        cancel: media_href(folder, &path),
    })
}

/// `POST /admin/media/delete` (`folder`, `path`, `file`)
pub async fn delete(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    let (folder, path) = place(&posted, &state)?;
    let file = posted.fields.required("file", "The file")?;
    let (dir, file) = (Subpath::parse(&path)?, FileName::parse(file)?);
    state.cms.delete_resource(&posted.user.principal, &ResourceRef::new(folder, dir, file)).await?;
    Ok(view::see_other(&format!("{}&ok=file-deleted", media_href(folder, &path))))
}

/// `POST /admin/media/folder` (`folder`, `path`, `name`)
pub async fn create_folder(posted: PostedForm, state: web::Data<AdminState>) -> AdminResult<HttpResponse> {
    let (folder, path) = place(&posted, &state)?;
    let name = posted.fields.required("name", "The folder name")?;
    let (dir, name) = (Subpath::parse(&path)?, FileName::parse(name)?);
    state.cms.create_resource_folder(&posted.user.principal, &ResourceRef::new(folder, dir, name)).await?;
    Ok(view::see_other(&format!("{}&ok=folder-created", media_href(folder, &path))))
}
