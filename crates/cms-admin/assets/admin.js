// The web editor's only script: live preview, uploads with progress (picker and drag and
// drop), copy buttons, the focus on a refused form's errors, media pickers with thumbnails
// (image fields and the body's Insert image), a reference's search, Ctrl/⌘+S and the leave
// warning of the edit form, and live changes (the list refreshes itself, the edit page
// says when someone else saved).
// Every page works without it; it adds what a form cannot do.
"use strict";

/** The CSRF token of the page's forms (every form carries it in a hidden field). */
function csrfToken() {
  const field = document.querySelector('input[name="csrf"]');
  return field ? field.value : "";
}

/** Live preview: the Markdown of a `data-preview` textarea, rendered by the server. */
function setUpPreview(textarea) {
  const target = document.getElementById(textarea.dataset.preview);
  const state = document.getElementById("preview-state");
  if (!target) return;
  let timer = null;
  let sent = 0;
  const refresh = async () => {
    const ticket = ++sent;
    const body = new URLSearchParams({ csrf: csrfToken(), body: textarea.value });
    try {
      const response = await fetch("/admin/preview", { method: "POST", body, credentials: "same-origin" });
      if (ticket !== sent) return; // a newer preview is on its way
      if (!response.ok) throw new Error("the server answered " + response.status);
      target.innerHTML = await response.text(); // rendered by the server, raw HTML removed
      // A short word in the status line, not the whole body read again.
      if (state) state.textContent = "Preview updated.";
    } catch (error) {
      if (state) state.textContent = "Preview not updated: " + error.message;
    }
  };
  textarea.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, 250);
  });
}

/** Uploads one file with progress shown in `list`; resolves to whether it was stored. */
function uploadFile(form, file, list) {
  const item = document.createElement("li");
  const name = document.createElement("span");
  name.textContent = file.name;
  const bar = document.createElement("progress");
  bar.max = 100;
  bar.value = 0;
  bar.setAttribute("aria-label", "Uploading " + file.name);
  const state = document.createElement("span");
  state.className = "hint";
  item.append(name, bar, state);
  list.append(item);
  return new Promise((resolve) => {
    const data = new FormData();
    data.append("csrf", form.elements.csrf.value); // the token goes first
    data.append("folder", form.elements.folder.value);
    data.append("path", form.elements.path.value);
    data.append("file", file, file.name);
    const request = new XMLHttpRequest();
    request.open("POST", form.action);
    request.setRequestHeader("Accept", "application/json");
    request.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) bar.value = Math.round((event.loaded / event.total) * 100);
    });
    request.addEventListener("load", () => {
      let answer = null;
      try { answer = JSON.parse(request.responseText); } catch (_) { answer = null; }
      if (request.status === 200) {
        bar.value = 100;
        state.textContent = "stored as " + (answer && answer[0] ? answer[0].name : file.name);
        resolve(true);
      } else {
        state.textContent = "failed: " + (answer && answer.error ? answer.error : "status " + request.status);
        item.classList.add("error");
        resolve(false);
      }
    });
    request.addEventListener("error", () => {
      state.textContent = "failed: the connection broke";
      resolve(false);
    });
    request.send(data);
  });
}

/** Upload forms: files chosen or dropped are sent one by one, each with a progress bar. */
function setUpUpload(form) {
  const zone = form.querySelector("[data-dropzone]");
  const list = form.querySelector("[data-progress]");
  const picker = form.elements.file;
  const send = async (files) => {
    if (!files.length) return;
    let stored = 0;
    for (const file of files) {
      if (await uploadFile(form, file, list)) stored++;
    }
    if (stored === files.length) {
      const url = new URL(window.location.href);
      url.searchParams.set("ok", "uploaded");
      window.location.assign(url.toString());
    }
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    send(Array.from(picker.files));
  });
  for (const name of ["dragenter", "dragover"]) {
    zone.addEventListener(name, (event) => {
      event.preventDefault();
      zone.classList.add("over");
    });
  }
  for (const name of ["dragleave", "drop"]) {
    zone.addEventListener(name, () => zone.classList.remove("over"));
  }
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    send(Array.from(event.dataTransfer.files));
  });
}

/** Copy buttons: `data-copy` names the field whose value is copied. */
function setUpCopy(button) {
  const field = document.getElementById(button.dataset.copy);
  const state = document.querySelector('[data-copied="' + button.dataset.copy + '"]');
  button.addEventListener("click", async () => {
    let copied = false;
    try {
      // A browser that neither grants nor refuses must not leave the button hanging.
      const refusal = new Promise((_, reject) => setTimeout(() => reject(new Error("no answer")), 1000));
      await Promise.race([navigator.clipboard.writeText(field.value), refusal]);
      copied = true;
    } catch (_) {
      // No clipboard permission (or not a secure context): select it for Ctrl+C.
      field.focus();
      field.select();
    }
    if (state) state.textContent = copied ? "Copied." : "Selected: press Ctrl+C (or ⌘C) to copy.";
  });
}

/** The media picker: a button that opens a panel of the library's files (the URLs of
 *  `list`, a datalist), thumbnails for images (each option's `data-thumb`, a width the
 *  site renders), and an upload that picks what it stored.
 *  `choose(url)` takes the pick. Image fields and the body's "Insert image" both use it.
 *  Keyboard: the panel takes the focus when it opens, Escape closes it and gives the
 *  focus back to its button; a pick gives it to what `choose` focuses. */
function mediaPicker(list, images, id, toggleText, choose) {
  const picker = document.createElement("div");
  picker.className = "picker";
  const toggle = document.createElement("button");
  toggle.type = "button";
  toggle.id = id + "-choose";
  toggle.textContent = toggleText;
  toggle.setAttribute("aria-expanded", "false");
  const panel = document.createElement("ul");
  panel.className = "picks";
  panel.id = id + "-picks";
  panel.hidden = true;
  toggle.setAttribute("aria-controls", panel.id);
  const listed = new Map(); // URL → its thumbnail's URL (images)
  const close = () => {
    panel.hidden = true;
    toggle.setAttribute("aria-expanded", "false");
  };
  const pick = (url) => {
    close();
    choose(url);
  };
  const add = (url, thumb) => {
    listed.set(url, thumb);
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.value = url;
    button.setAttribute("aria-label", "Choose " + url);
    if (images && thumb) {
      const img = document.createElement("img");
      img.src = thumb;
      img.alt = "";
      img.loading = "lazy";
      button.append(img);
    }
    const label = document.createElement("span");
    label.textContent = url.split("/").pop();
    button.append(label);
    button.addEventListener("click", () => pick(url));
    item.append(button);
    panel.append(item);
  };
  for (const option of list.options) add(option.value, option.dataset.thumb);
  // Upload a new file into a resource folder (the folders' datalist; asked for when there
  // are several), and choose it.
  const upload = document.createElement("li");
  upload.className = "upload";
  const uploadLabel = document.createElement("label");
  uploadLabel.htmlFor = id + "-upload";
  uploadLabel.textContent = images ? "Upload an image" : "Upload a file";
  const file = document.createElement("input");
  file.type = "file";
  file.id = id + "-upload";
  if (images) file.accept = "image/*";
  const state = document.createElement("span");
  state.className = "hint";
  state.setAttribute("role", "status");
  const folders = document.getElementById("dl-folders");
  // The first folder the user may list (a site may have one the role cannot see first).
  const firstFolder = folders && folders.options.length ? folders.options[0].value : "0";
  let folder = null;
  if (folders && folders.options.length > 1) {
    const folderLabel = document.createElement("label");
    folderLabel.htmlFor = id + "-upload-folder";
    folderLabel.textContent = "Upload into";
    folder = document.createElement("select");
    folder.id = id + "-upload-folder";
    for (const option of folders.options) folder.append(new Option(option.label, option.value));
    // The folder first: choosing a file uploads it at once.
    upload.append(folderLabel, folder, uploadLabel, file, state);
  } else {
    upload.append(uploadLabel, file, state);
  }
  panel.prepend(upload);
  file.addEventListener("change", () => {
    const chosenFile = file.files[0];
    if (!chosenFile) return;
    const data = new FormData();
    data.append("csrf", csrfToken()); // the token goes first
    data.append("folder", folder ? folder.value : firstFolder);
    data.append("path", "");
    data.append("file", chosenFile, chosenFile.name);
    state.textContent = "Uploading…";
    fetch("/admin/media/upload", {
      method: "POST", body: data, credentials: "same-origin", headers: { Accept: "application/json" },
    })
      .then(async (response) => {
        const answer = await response.json().catch(() => null);
        if (!response.ok || !answer || !answer[0]) {
          throw new Error(answer && answer.error ? answer.error : "the server answered " + response.status);
        }
        state.textContent = "Uploaded.";
        add(answer[0].url, answer[0].thumb);
        pick(answer[0].url);
      })
      .catch((error) => { state.textContent = "Not uploaded: " + error.message; });
  });
  toggle.addEventListener("click", () => {
    panel.hidden = !panel.hidden;
    toggle.setAttribute("aria-expanded", String(!panel.hidden));
    if (!panel.hidden) {
      const first = panel.querySelector("li:not(.upload) button") || file;
      first.focus();
    }
  });
  picker.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !panel.hidden) {
      event.preventDefault();
      event.stopPropagation();
      close();
      toggle.focus();
    }
  });
  picker.append(toggle, panel);
  return { picker, listed };
}

/** Image and file fields: the media picker sets the input, and a thumbnail shows the
 *  image chosen. */
function setUpMediaPicker(input) {
  const list = document.getElementById(input.getAttribute("list"));
  if (!list) return;
  const images = input.dataset.media === "image";
  const chosen = document.createElement("img");
  chosen.className = "chosen";
  chosen.alt = "";
  chosen.hidden = true;
  const { picker, listed } = mediaPicker(
    list, images, input.id, images ? "Choose an image" : "Choose a file", (url) => {
      input.value = url;
      input.dispatchEvent(new Event("input", { bubbles: true }));
      input.focus();
    });
  const show = () => {
    const value = input.value.trim();
    const thumb = images && listed.get(value);
    chosen.hidden = !thumb;
    if (thumb) chosen.src = thumb;
  };
  input.addEventListener("input", show);
  show();
  picker.prepend(chosen);
  input.after(picker);
}

/** A reference's input: its list holds the first page of the collection by title; what is
 *  typed (two characters or more) is searched for in the whole collection by the server,
 *  and the matches join the list (the browser's own suggestions show them). */
function setUpSuggest(input) {
  const list = document.getElementById(input.getAttribute("list"));
  if (!list) return;
  let timer = null;
  let sent = 0;
  const search = async () => {
    const typed = input.value.trim();
    if (typed.length < 2) return;
    const ticket = ++sent;
    try {
      const response = await fetch(input.dataset.suggest + "?q=" + encodeURIComponent(typed), {
        credentials: "same-origin", headers: { Accept: "application/json" },
      });
      if (ticket !== sent || !response.ok) return; // a newer search, or nothing to offer
      const found = await response.json();
      list.querySelectorAll("option[data-suggested]").forEach((option) => option.remove());
      const listed = new Set(Array.from(list.options, (option) => option.value));
      for (const { value, label } of found) {
        if (listed.has(value)) continue;
        const option = document.createElement("option");
        option.value = value;
        option.label = label;
        option.dataset.suggested = "";
        list.append(option);
      }
    } catch (error) {
      // The list stays as it was; the slug can still be typed.
    }
  };
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(search, 150);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  // A refused save: the summary of its errors takes the focus, so that it is read first.
  const summary = document.querySelector("[data-autofocus]");
  if (summary) summary.focus();
  document.querySelectorAll("textarea[data-preview]").forEach(setUpPreview);
  document.querySelectorAll("form[data-upload]").forEach(setUpUpload);
  document.querySelectorAll("button[data-copy]").forEach(setUpCopy);
  document.querySelectorAll("input[data-media][list]").forEach(setUpMediaPicker);
  document.querySelectorAll("input[data-suggest][list]").forEach(setUpSuggest);
  setUpWriting();
});

// ---------------------------------------------------------------------------------------
// Writing (issue 36): the edit form never leaves typed work silently, saves with
// Ctrl+S or ⌘S; the body's "Insert image" (the same media picker as image fields); the
// media page uploads as soon as files are chosen, and its sizes change the Markdown to copy.

/** The edit form: a warning before leaving it changed (armed by the first change, or at
 *  once when the page holds text that was not saved: a conflict, a refused save), disarmed
 *  by a submit; Ctrl+S or ⌘S saves (Save, or Create on a new item). */
function setUpEditForm(form) {
  let changed = form.hasAttribute("data-unsaved");
  const arm = () => { changed = true; };
  form.addEventListener("input", arm);
  form.addEventListener("change", arm);
  form.addEventListener("submit", () => { changed = false; });
  window.addEventListener("beforeunload", (event) => {
    if (!changed) return undefined;
    event.preventDefault();
    event.returnValue = ""; // older browsers ask for a value
    return "";
  });
  document.addEventListener("keydown", (event) => {
    if (!(event.ctrlKey || event.metaKey) || event.altKey || event.shiftKey) return;
    if (event.key !== "s" && event.key !== "S") return;
    event.preventDefault(); // not the browser's "Save page as"
    const save = form.querySelector("#save, #create");
    if (save && typeof form.requestSubmit === "function") form.requestSubmit(save);
    else if (save) save.click();
  });
}

/** `![alt](url)` of a library URL, as the media page writes it (`media_library.rs`): the
 *  alt is the file's name without its extension, `-` and `_` as spaces. */
function markdownOf(url) {
  let name = url.split("?")[0].split("/").pop();
  try { name = decodeURIComponent(name); } catch (_) { /* keep it encoded */ }
  const dot = name.lastIndexOf(".");
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const alt = stem.replace(/[-_]/g, " ").split(/\s+/).filter(Boolean).join(" ").replace(/[\\[\]]/g, "\\$&");
  const target = /[ ()]/.test(url) ? "<" + url + ">" : url;
  return "![" + alt + "](" + target + ")";
}

/** The body's "Insert image": the media picker over the library's images; a pick puts its
 *  Markdown at the text's cursor (replacing a selection) and gives the text the focus. */
function setUpInsertImage(place) {
  const textarea = document.getElementById(place.dataset.insertImage);
  const list = document.getElementById(place.dataset.list);
  if (!textarea || !list) return;
  const { picker } = mediaPicker(list, true, textarea.id + "-image", "Insert image", (url) => {
    const start = textarea.selectionStart;
    const end = textarea.selectionEnd;
    textarea.focus();
    textarea.setRangeText(markdownOf(url), start, end, "end");
    textarea.dispatchEvent(new Event("input", { bubbles: true }));
  });
  place.replaceChildren(picker);
}

/** The media page: a choice of files (or a drop) uploads at once, so its Upload button
 *  goes; the size of an image changes the Markdown its button copies. */
function setUpMediaPage() {
  const form = document.querySelector("form[data-upload]");
  if (form) {
    const submit = form.querySelector("#upload");
    if (submit) submit.hidden = true;
    form.elements.file.addEventListener("change", () => form.requestSubmit());
  }
  document.querySelectorAll("select[data-markdown-for]").forEach((select) => {
    const field = document.getElementById(select.dataset.markdownFor);
    if (!field) return;
    select.addEventListener("change", () => {
      field.value = select.selectedOptions[0].dataset.markdown;
    });
  });
}

function setUpWriting() {
  const edit = document.getElementById("edit-form");
  if (edit) setUpEditForm(edit);
  document.querySelectorAll("[data-insert-image]").forEach(setUpInsertImage);
  setUpMediaPage();
}

// ---- Sessions and error pages (issue 36: typed work kept, error pages) ----------------

/** A `data-countdown` span (how long a sign-in is paused): counts down to "now". The
 * page says the same without the script; the form stays usable, the server decides. */
function setUpCountdown(span) {
  let left = Number(span.dataset.countdown);
  if (!Number.isFinite(left) || left <= 0) return;
  const until = Date.now() + left * 1000;
  const show = () => {
    left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
    if (left === 0) {
      span.textContent = "a moment: you can sign in now";
      clearInterval(timer);
      return;
    }
    span.textContent = left < 120 ? `${left} second${left === 1 ? "" : "s"}` : `${Math.ceil(left / 60)} minutes`;
  };
  const timer = setInterval(show, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("span[data-countdown]").forEach(setUpCountdown);
});

// ---------------------------------------------------------------------------------------
// Live changes (issue 47): the item list and the edit page follow the site's event stream
// (`/admin/events`, Server-Sent Events with the session cookie). Without the script the
// list is as fresh as its last load and a save that meets a newer version shows both.

/** Follows `url` (an `/admin/events` URL that carries `since`): `onEvent` gets each
 *  event's JSON. EventSource reconnects by itself with the last id it saw; when the
 *  server refused it (the session ended), it stops. */
function followEvents(url, onEvent) {
  if (typeof EventSource !== "function") return;
  const source = new EventSource(url, { withCredentials: true });
  const handle = (message) => {
    let event = null;
    try { event = JSON.parse(message.data); } catch (_) { return; }
    onEvent(event);
  };
  for (const name of ["file.created", "file.updated", "file.deleted", "item.published", "item.unpublished", "reset"]) {
    source.addEventListener(name, handle);
  }
  window.addEventListener("pagehide", () => source.close());
}

/** The item list: on a change in its collection, the same URL is fetched again and the
 *  list (count, rows, pages) swapped in; the rows of changed items are marked, and a
 *  screen reader hears how many changed. Changes that arrive together are fetched once. */
function setUpLiveList(region) {
  const status = document.getElementById("live-status");
  let timer = null;
  let changed = new Set();
  const refresh = async () => {
    timer = null;
    const slugs = changed;
    changed = new Set();
    try {
      const response = await fetch(window.location.href, { credentials: "same-origin" });
      if (!response.ok) return;
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.querySelector("[data-live-list]");
      if (!fresh) return;
      region.innerHTML = fresh.innerHTML;
      region.querySelectorAll("tr[data-slug]").forEach((row) => {
        if (slugs.has(row.dataset.slug)) row.classList.add("fresh");
      });
      if (status) {
        const count = slugs.size;
        status.textContent = count === 0 ? "The list was updated."
          : `The list was updated: ${count} item${count === 1 ? "" : "s"} changed.`;
      }
    } catch (_) { /* the next change tries again */ }
  };
  followEvents(region.dataset.live, (event) => {
    if (event.data && event.data.slug) changed.add(event.data.slug);
    if (timer === null) timer = setTimeout(refresh, 300);
  });
}

/** The edit page: when someone else changes the item while it is open, a notice says so
 *  before a save would conflict, with their version against the form's one click away. */
function setUpLiveItem(notice) {
  const text = notice.querySelector("[data-live-text]");
  const compare = notice.querySelector("[data-live-compare]");
  followEvents(notice.dataset.live, (event) => {
    if (event.event === "reset") return;
    const when = new Date(event.timestamp);
    const at = Number.isNaN(when.getTime()) ? "" : " at " + when.toLocaleTimeString();
    if (event.event === "file.deleted") {
      text.textContent = `Someone deleted this item${at}. Saving now would fail: copy what you typed first.`;
      if (compare) compare.hidden = true;
    } else {
      text.textContent = `Someone else saved this item${at}. Saving now would conflict: compare their version with yours first.`;
      if (compare) compare.hidden = false;
    }
    notice.hidden = false;
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-live-list][data-live]").forEach(setUpLiveList);
  document.querySelectorAll("[data-live-item][data-live]").forEach(setUpLiveItem);
});
