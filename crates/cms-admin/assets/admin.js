// The web editor's only script: live preview, uploads with progress (picker and drag and
// drop), copy buttons, the focus on a refused form's errors, media pickers with thumbnails.
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
      if (state) state.textContent = "";
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

/** Image and file fields: a panel of the resource folders' files (the input's datalist)
 *  to pick from, thumbnails for images, and a thumbnail of the image chosen. */
function setUpMediaPicker(input) {
  const list = document.getElementById(input.getAttribute("list"));
  if (!list) return;
  const images = input.dataset.media === "image";
  const thumb = (url) => url + "?w=160";
  const picker = document.createElement("div");
  picker.className = "picker";
  const chosen = document.createElement("img");
  chosen.className = "chosen";
  chosen.alt = "";
  chosen.hidden = true;
  const toggle = document.createElement("button");
  toggle.type = "button";
  toggle.id = input.id + "-choose";
  toggle.textContent = images ? "Choose an image" : "Choose a file";
  toggle.setAttribute("aria-expanded", "false");
  const panel = document.createElement("ul");
  panel.className = "picks";
  panel.id = input.id + "-picks";
  panel.hidden = true;
  toggle.setAttribute("aria-controls", panel.id);
  const listed = new Set();
  const choose = (url) => {
    input.value = url;
    input.dispatchEvent(new Event("input", { bubbles: true }));
    panel.hidden = true;
    toggle.setAttribute("aria-expanded", "false");
    input.focus();
  };
  const add = (url) => {
    listed.add(url);
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.value = url;
    button.setAttribute("aria-label", "Choose " + url);
    if (images) {
      const img = document.createElement("img");
      img.src = thumb(url);
      img.alt = "";
      img.loading = "lazy";
      button.append(img);
    }
    const label = document.createElement("span");
    label.textContent = url.split("/").pop();
    button.append(label);
    button.addEventListener("click", () => choose(url));
    item.append(button);
    panel.append(item);
  };
  for (const option of list.options) add(option.value);
  // Upload a new file into the first resource folder, and choose it.
  const upload = document.createElement("li");
  upload.className = "upload";
  const uploadLabel = document.createElement("label");
  uploadLabel.htmlFor = input.id + "-upload";
  uploadLabel.textContent = images ? "Upload an image" : "Upload a file";
  const file = document.createElement("input");
  file.type = "file";
  file.id = input.id + "-upload";
  if (images) file.accept = "image/*";
  const state = document.createElement("span");
  state.className = "hint";
  state.setAttribute("role", "status");
  upload.append(uploadLabel, file, state);
  panel.prepend(upload);
  file.addEventListener("change", () => {
    const chosenFile = file.files[0];
    if (!chosenFile) return;
    const data = new FormData();
    data.append("csrf", csrfToken()); // the token goes first
    data.append("folder", "0");
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
        add(answer[0].url);
        choose(answer[0].url);
      })
      .catch((error) => { state.textContent = "Not uploaded: " + error.message; });
  });
  const show = () => {
    const value = input.value.trim();
    chosen.hidden = !(images && listed.has(value));
    if (!chosen.hidden) chosen.src = thumb(value);
  };
  toggle.addEventListener("click", () => {
    panel.hidden = !panel.hidden;
    toggle.setAttribute("aria-expanded", String(!panel.hidden));
  });
  input.addEventListener("input", show);
  show();
  picker.append(chosen, toggle, panel);
  input.after(picker);
}

document.addEventListener("DOMContentLoaded", () => {
  // A refused save: the summary of its errors takes the focus, so that it is read first.
  const summary = document.querySelector("[data-autofocus]");
  if (summary) summary.focus();
  document.querySelectorAll("textarea[data-preview]").forEach(setUpPreview);
  document.querySelectorAll("form[data-upload]").forEach(setUpUpload);
  document.querySelectorAll("button[data-copy]").forEach(setUpCopy);
  document.querySelectorAll("input[data-media][list]").forEach(setUpMediaPicker);
});

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
