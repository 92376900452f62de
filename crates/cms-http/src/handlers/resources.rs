//! Resource folders: list, upload (multipart, streamed), rename/move, delete, subfolders.

use actix_multipart::Multipart;
use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use cms_core::CoreResult;
use cms_core::answers::{Acknowledged, Done};
use cms_core::license::Feature;
use cms_core::resource::{FileName, ResourceRef, Subpath, sanitize_upload_name};
use cms_core::service::{Upload, parse_folder_index};
use cms_core::upload::{self, UploadFailed};
use futures_util::StreamExt;

use crate::auth::{EditorShape, KeyUser};
use crate::body::{Fields, bad_request, json_object};
use crate::dto::{ResourceFileDto, ResourceListingDto};
use crate::error::{ApiError, Shape};
use crate::handlers::items::query_map;
use crate::state::AppState;

const SHAPE: Shape = Shape::Editor;
/// Largest `folder` or `subpath` form field.
const MAX_TEXT_FIELD: usize = 2048;

/// A `subpath` as sent: absent or empty, the resource folder itself.
fn subpath(raw: Option<&str>) -> CoreResult<Subpath> {
    Subpath::parse(raw.unwrap_or(""))
}

/// `GET /cms/resources?folder=&subpath=`
pub async fn list(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let mut query = query_map(&req, SHAPE)?;
    let (folder, subpath) = (query.remove("folder"), query.remove("subpath"));
    let (listing, licensed) = state
        .run(SHAPE, async {
            let folder = parse_folder_index(folder.as_deref())?;
            let listing = state
                .cms
                .list_resources(&user.principal, folder, &self::subpath(subpath.as_deref())?)
                .await?;
            Ok((listing, state.cms.license_state().await?.has(Feature::JsonApi)))
        })
        .await?;
    Ok(HttpResponse::Ok().json(ResourceListingDto::new(listing, licensed)))
}

/// `POST /cms/resources` (multipart: `file`, `folder`, `subpath`).
pub async fn upload(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let content_type = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !content_type.to_ascii_lowercase().starts_with("multipart/form-data") {
        return Err(ApiError::unsupported_media_type(
            SHAPE,
            "send uploads as multipart/form-data with a file part named \"file\"; base64 uploads are not accepted",
            "multipart/form-data",
            false,
        ));
    }
    let limit = state.upload_limit;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            SHAPE,
            format!("the upload is over the limit of {limit} bytes"),
        )
    };
    let declared =
        req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    // Form framing adds a little; anything far over the limit is refused before reading.
    if declared.is_some_and(|n| n > limit + 64 * 1024) {
        return Err(too_large());
    }

    let mut form = Multipart::new(req.headers(), payload);
    let (mut folder, mut subpath, mut received): (Option<String>, Option<String>, Option<(Upload, String)>) =
        (None, None, None);
    while let Some(field) = form.next().await {
        let mut field = field.map_err(|e| bad_request(SHAPE, format!("malformed multipart body: {e}")))?;
        let name = field.name().unwrap_or_default().to_owned();
        match name.as_str() {
            "file" => {
                let Some(filename) =
                    field.content_disposition().and_then(|d| d.get_filename()).map(str::to_owned)
                else {
                    return Err(bad_request(
                        SHAPE,
                        "the \"file\" part must be a file with a filename; base64 uploads are not accepted",
                    ));
                };
                if received.is_some() {
                    return Err(bad_request(SHAPE, "send one file per upload"));
                }
                let upload = upload::receive(&state.cms, &user.principal, limit, &mut field).await.map_err(
                    |failed| match failed {
                        UploadFailed::CutOff(e) => bad_request(SHAPE, upload::cut_off_message(e)),
                        UploadFailed::Refused(e) => ApiError::from_core(e, SHAPE),
                    },
                )?;
                received = Some((upload, filename));
            }
            "folder" => folder = Some(text_field(&mut field, "folder").await?),
            "subpath" => subpath = Some(text_field(&mut field, "subpath").await?),
            other => {
                return Err(bad_request(
                    SHAPE,
                    format!("unknown form field {other:?}; the fields are file, folder, subpath"),
                ));
            }
        }
    }
    let (upload, filename) = received.ok_or_else(|| {
        bad_request(SHAPE, "missing the \"file\" part: send the file as multipart/form-data")
    })?;
    let (folder, dir, stored) = state
        .run(SHAPE, async {
            let folder = parse_folder_index(folder.as_deref())?;
            let dir = self::subpath(subpath.as_deref())?;
            let name = sanitize_upload_name(&filename)?;
            let stored =
                state.cms.finish_upload(upload, &ResourceRef::new(folder, dir.clone(), name)).await?;
            Ok((folder, dir, stored))
        })
        .await?;
    // The presets are made after the answer, on the image workers.
    if let Some(job) = upload::presets_later(state.cms.clone(), folder, dir, &stored) {
        actix_web::rt::spawn(job);
    }
    Ok(HttpResponse::Ok().json(ResourceFileDto::from(stored)))
}

/// A small text form field, as UTF-8.
async fn text_field(field: &mut actix_multipart::Field, name: &str) -> Result<String, ApiError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.next().await {
        let chunk = chunk.map_err(|e| bad_request(SHAPE, format!("malformed multipart body: {e}")))?;
        if bytes.len() + chunk.len() > MAX_TEXT_FIELD {
            return Err(bad_request(SHAPE, format!("{name} is longer than {MAX_TEXT_FIELD} bytes")));
        }
        bytes.extend_from_slice(&chunk);
    }
    String::from_utf8(bytes).map_err(|_| bad_request(SHAPE, format!("{name} is not UTF-8 text")))
}

/// `PATCH /cms/resources`: rename (`file`, `newName`) or move (`op: "move"`,
/// `dest_subpath`, optional `new_filename`).
pub async fn rename_or_move(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = json_object(&req, payload, state.json_limit, SHAPE).await?;
    let allowed = ["op", "folder", "subpath", "file", "newName", "dest_subpath", "new_filename"];
    let mut fields = Fields::new(body, &allowed, SHAPE)?;
    let op = fields.string("op")?;
    let folder = fields.index("folder")?;
    let subpath = fields.string("subpath")?;
    let file = fields.required_string("file")?;
    let (name, message) = match op.as_deref() {
        None | Some("rename") => {
            let new_name = fields.required_string("newName")?;
            let renamed = async {
                let folder = parse_folder_index(folder.as_deref())?;
                let (dir, file) = (self::subpath(subpath.as_deref())?, FileName::parse(&file)?);
                let new_name = FileName::parse(&new_name)?;
                state
                    .cms
                    .rename_resource(&user.principal, &ResourceRef::new(folder, dir, file), &new_name)
                    .await
            };
            (state.run(SHAPE, renamed).await?, Done::FileRenamed)
        }
        Some("move") => {
            let dest = fields.required_string("dest_subpath")?;
            let new_filename = fields.string("new_filename")?;
            let moved = async {
                let folder = parse_folder_index(folder.as_deref())?;
                let (dir, file) = (self::subpath(subpath.as_deref())?, FileName::parse(&file)?);
                let dest = Subpath::parse(&dest)?;
                // An empty new name keeps the file's name.
                let new_name =
                    new_filename.as_deref().filter(|n| !n.is_empty()).map(FileName::parse).transpose()?;
                let cms = &state.cms;
                let at = ResourceRef::new(folder, dir, file);
                cms.move_resource(&user.principal, &at, &dest, new_name.as_ref()).await
            };
            (state.run(SHAPE, moved).await?, Done::FileMoved)
        }
        Some(other) => {
            return Err(bad_request(
                SHAPE,
                format!("op must be \"move\" (or absent for a rename), got {other:?}"),
            ));
        }
    };
    Ok(HttpResponse::Ok().json(Acknowledged::named(message, name)))
}

/// `DELETE /cms/resources` (`folder`, `subpath`, `file`): a file, or an empty folder.
pub async fn delete(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = json_object(&req, payload, state.json_limit, SHAPE).await?;
    let mut fields = Fields::new(body, &["folder", "subpath", "file"], SHAPE)?;
    let (folder, subpath, file) =
        (fields.index("folder")?, fields.string("subpath")?, fields.required_string("file")?);
    let delete = async {
        let folder = parse_folder_index(folder.as_deref())?;
        let (dir, file) = (self::subpath(subpath.as_deref())?, FileName::parse(&file)?);
        state.cms.delete_resource(&user.principal, &ResourceRef::new(folder, dir, file)).await
    };
    state.run(SHAPE, delete).await?;
    Ok(HttpResponse::Ok().json(Acknowledged::new(Done::FileDeleted)))
}

/// `POST /cms/resources/folders` (`folder`, `subpath`, `name`).
pub async fn create_folder(
    state: web::Data<AppState>,
    user: KeyUser<EditorShape>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = json_object(&req, payload, state.json_limit, SHAPE).await?;
    let mut fields = Fields::new(body, &["folder", "subpath", "name"], SHAPE)?;
    let (folder, subpath, name) =
        (fields.index("folder")?, fields.string("subpath")?, fields.required_string("name")?);
    let create = async {
        let folder = parse_folder_index(folder.as_deref())?;
        let (dir, name) = (self::subpath(subpath.as_deref())?, FileName::parse(&name)?);
        state.cms.create_resource_folder(&user.principal, &ResourceRef::new(folder, dir, name)).await
    };
    let name = state.run(SHAPE, create).await?;
    Ok(HttpResponse::Ok().json(Acknowledged::named(Done::FolderCreated, name)))
}
