"""The edit form of a collection with a content model, in a real browser (Chromium by Selenium).

Run by crates/cms/tests/it/admin_browser.rs against a server on a copy of the demo site whose
posts have a model (crates/cms/tests/it/admin_model.rs), with these environment variables:

  CMS_BASE              the server, e.g. http://127.0.0.1:40123
  CMS_OWNER             an owner's email; CMS_PASSWORD its password
  CMS_AXE_JS            axe-core's axe.min.js (the accessibility checks)
  CMS_SCREENSHOTS       a folder for screenshots of the form (optional)
  CMS_CHROMIUM, CMS_CHROMEDRIVER  the browser and its driver (default: Debian's paths)

Steps: open a post, check the page with axe-core; type an invalid value that the browser
cannot check (a pattern) and save: the page comes back with the summary focused, the value
still typed, the input marked aria-invalid and described by its message; axe-core again;
follow the summary's link to the input, fix it, fill typed inputs, pick an image from the
media picker (thumbnails; axe-core with it open), upload one from it into the second
resource folder (chosen at once), name a page in the reference input (its list offers the
pages' slugs and titles) and save: saved. The Rust test then reads the file for the typed
values and finds the upload in the folder chosen. Any error the browser logs fails the run,
except the refusal's own 422.
"""

import struct
import zlib

from editor import *  # noqa: F403 (the driver, sign-in, find and fill, axe-core, shots)

ITEM = "/admin/collections/blog-posts/items/2026-01-12-hello-world.md"


def png(width, height, rgb):
    """A small PNG of one color, written by hand (no imaging library needed)."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


try:
    step("sign in")
    driver.get(BASE + "/admin/")
    fill("input[name=email]", OWNER)
    fill("input[name=password]", PASSWORD + Keys.ENTER)
    wait.until(EC.presence_of_element_located((By.ID, "sign-out")))

    step("the form built from the model, checked by axe-core")
    driver.get(BASE + ITEM)
    find("#f-title")
    assert find("#f-price").get_attribute("type") == "number"
    assert find("#f-featured").get_attribute("type") == "checkbox"
    assert find("#f-cover").get_attribute("list") == "dl-images"
    assert not driver.find_elements(By.ID, "error-summary"), "a valid item has no notice"
    axe("the edit form")
    shot("edit-model")
    console()

    step("an invalid value comes back at its field")
    fill("#f-sku", "nope")
    fill("#f-price", "12.5")
    find("#save").click()
    summary = find("#error-summary")
    assert "Nothing was saved: 1 field to fix" in summary.text, summary.text
    wait.until(lambda d: active_id() == "error-summary")
    sku = find("#f-sku")
    assert sku.get_attribute("value") == "nope", "what was typed is kept"
    assert find("#f-price").get_attribute("value") == "12.5", "every input keeps what was typed"
    assert sku.get_attribute("aria-invalid") == "true"
    described = sku.get_attribute("aria-describedby").split()
    assert "f-sku-error" in described, described
    assert "must match the pattern" in find("#f-sku-error").text
    axe("the refused form")
    shot("edit-model-refused")
    console(expected=["status of 422"])

    step("the summary links to the input; fixed, the save goes through")
    summary.find_element(By.CSS_SELECTOR, 'a[href="#f-sku"]').click()
    wait.until(lambda d: active_id() == "f-sku")
    fill("#f-sku", "ABC-12")
    find("#f-featured").click()
    find("#f-cover-choose").click()
    pick = find('#f-cover-picks button[data-value="/media/uploads/logo.png"]')
    thumb = pick.find_element(By.TAG_NAME, "img")
    wait.until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", thumb))
    axe("the media picker")
    shot("edit-model-picker")
    pick.click()
    assert find("#f-cover").get_attribute("value") == "/media/uploads/logo.png"
    assert active_id() == "f-cover", "the focus goes back to the input"

    step("upload an image from the picker into the second folder; it is chosen")
    find("#f-cover-choose").click()
    Select(find("#f-cover-upload-folder")).select_by_visible_text("Documents")
    image = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"picked-{os.getpid()}.png")
    with open(image, "wb") as out:
        out.write(png(24, 24, (200, 80, 20)))
    find("#f-cover-upload").send_keys(image)
    name = os.path.basename(image)
    wait.until(lambda d: find("#f-cover").get_attribute("value") == f"/media/docs/{name}")
    os.remove(image)
    uploaded = find(f'#f-cover-picks button[data-value="/media/docs/{name}"] img')
    # Thumbnails are small variants the server names (the upload's answer, the datalist).
    assert uploaded.get_attribute("src").endswith(f"/media/docs/{name}?w=160"), uploaded.get_attribute("src")
    # Back to the listed one, so that the saved file names it.
    find("#f-cover-choose").click()
    find('#f-cover-picks button[data-value="/media/uploads/logo.png"]').click()
    assert find("#f-cover").get_attribute("value") == "/media/uploads/logo.png"
    chosen = find("#f-cover + .picker img.chosen")
    assert chosen.get_attribute("src").endswith("/media/uploads/logo.png?w=160"), chosen.get_attribute("src")
    wait.until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", chosen))
    Select(find("#f-category")).select_by_value("guide")
    find('input[name="fm.topics"][value="web"]').click()

    step("the reference's list offers the items of its collection, with their titles")
    related = find("#f-related")
    assert related.get_attribute("list") == "dl-ref-pages"
    offered = driver.execute_script(
        "return Array.from(document.querySelectorAll('#dl-ref-pages option')).map(o => [o.value, o.label])")
    assert ["about", "About"] in offered, offered
    assert ["zulu-draft", "Zulu draft"] not in offered, "past the first page by title"
    step("what is typed into a reference is searched for in the whole collection, drafts too")
    related.send_keys("zulu")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#dl-ref-pages option[value="zulu-draft"]'))
    assert find('#dl-ref-pages option[value="zulu-draft"]').get_attribute("label") == "Zulu draft"
    related.clear()
    related.send_keys("abo")
    related.send_keys("ut")
    find("#save").click()
    wait.until(EC.url_contains("?ok=saved"))
    assert find("#f-related").get_attribute("value") == "about"
    assert find("#f-sku").get_attribute("value") == "ABC-12"
    assert find("#f-featured").is_selected()
    assert not driver.find_elements(By.ID, "error-summary")
    console()

    step("the new item form, checked by axe-core")
    driver.get(BASE + "/admin/collections/blog-posts/new")
    find("#f-title")
    assert find("#slug") and find("#create")
    axe("the new item form")
    console()
    step("done")
finally:
    driver.quit()
