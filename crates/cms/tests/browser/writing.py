"""Writing in the editor (issue 36), in a real browser: run by
crates/cms/tests/it/admin_writing.rs (`writing_works_in_a_real_browser`) on a copy of the
demo site, with the environment editor.py describes.

Steps: the action bar (Save, Publish, Preview, the status) is in view without scrolling at
1280x800 and 375x800 on the edit and new-item pages; axe-core on both pages at both
widths; a changed form (typed into, or an image picked) asks the browser to warn before
leaving (its beforeunload handler cancels the event; classic WebDriver accepts the prompt
itself, so the alert cannot be seen) and an unchanged one leaves at once; keyboard only: Tab walks the page in
order (the Insert image button, the text, the bar's Save, Publish and Preview, History),
Insert image opens its panel with the focus in it, Escape closes it and gives the focus
back, a pick (Enter) puts the image's Markdown at the text's cursor and gives the text the
focus; Ctrl+S saves (no warning: a submit disarms it); on the media page a chosen file is
uploaded at once (no Upload button with the script), Copy URL and Copy Markdown (at a
chosen size) put the right text on the clipboard; axe-core on the media page at both
widths. The Rust test then reads the saved file.
"""

import os
import struct
import zlib

from editor import *
from selenium.webdriver.common.action_chains import ActionChains

HELLO = "/admin/collections/blog-posts/items/2026-01-12-hello-world.md"
LOGO = "/media/uploads/logo.png"


def png(width, height, rgb):
    """A small PNG of one colour, written by hand (no imaging library needed)."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def keys(*sequence):
    ActionChains(driver).send_keys(*sequence).perform()


def shift_tab():
    ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()


def ctrl(key):
    ActionChains(driver).key_down(Keys.CONTROL).send_keys(key).key_up(Keys.CONTROL).perform()


def in_view_unscrolled(element_id, width):
    """At `width` x 800, freshly loaded (not scrolled), the element is inside the window and
    is what is drawn at its centre (nothing covers it)."""
    driver.set_window_size(width, 800)
    driver.refresh()
    find("#" + element_id)
    seen = driver.execute_script(
        """
        const element = document.getElementById(arguments[0]);
        const box = element.getBoundingClientRect();
        const x = box.left + box.width / 2, y = box.top + box.height / 2;
        return { scrolled: window.scrollY, top: box.top, bottom: box.bottom, height: window.innerHeight,
                 width: window.innerWidth, right: box.right,
                 hit: element.contains(document.elementFromPoint(x, y)) };
        """,
        element_id,
    )
    driver.set_window_size(1280, 900)
    assert seen["scrolled"] == 0, seen
    assert seen["top"] >= 0 and seen["bottom"] <= seen["height"], f"#{element_id} at {width} px: {seen}"
    assert seen["right"] <= seen["width"], f"#{element_id} at {width} px: {seen}"
    assert seen["hit"], f"#{element_id} is covered at {width} px: {seen}"


def tab_order(last, limit=120):
    """The ids the Tab key gives the focus to, from the top of the page to `last`; each
    focused control is scrolled into view and not hidden under the pinned bar."""
    driver.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    seen = []
    for _ in range(limit):
        keys(Keys.TAB)
        seen.append(active_id())
        hidden = driver.execute_script(
            """
            const e = document.activeElement, b = e.getBoundingClientRect();
            const hit = document.elementFromPoint(b.left + Math.min(b.width / 2, 20), b.top + Math.min(b.height / 2, 10));
            return hit && (hit === e || e.contains(hit)) ? null : [e.id || e.tagName, b.top, window.innerHeight];
            """)
        assert not hidden, f"the focused control is hidden: {hidden}"
        if seen[-1] == last:
            return seen
    raise AssertionError(f"#{last} was not reached with the Tab key: {seen}")


def leave_warns():
    """Whether the page's beforeunload handler asks the browser to warn (cancels the event)."""
    return driver.execute_script(
        "const e = new Event('beforeunload', { cancelable: true }); window.dispatchEvent(e);"
        "return e.defaultPrevented")


def copied_by(button_css, field_css):
    """Clicks a copy button; the text it put on the clipboard (what it handed to
    `navigator.clipboard.writeText`, which then answered), or the selection its fallback
    makes when the clipboard is refused."""
    driver.execute_script(
        """
        if (!window.copiedTexts) {
          window.copiedTexts = [];
          const write = navigator.clipboard.writeText.bind(navigator.clipboard);
          navigator.clipboard.writeText = (text) => write(text).then(() => { window.copiedTexts.push(text); });
        }
        window.copiedTexts.length = 0;
        """)
    field = find(field_css)
    state = find(f'[data-copied="{field.get_attribute("id")}"]')
    driver.execute_script("arguments[0].textContent = ''", state)
    find(button_css).click()
    wait.until(lambda d: state.text != "")
    if state.text == "Copied.":
        texts = driver.execute_script("return window.copiedTexts")
        assert len(texts) == 1, texts
        return texts[0]
    return driver.execute_script(
        "const f = arguments[0]; return f.value.slice(f.selectionStart, f.selectionEnd);", field)


def run():
    step("sign in")
    sign_in()
    # The page may write to the clipboard.
    for permission in ("clipboardReadWrite", "clipboardSanitizedWrite"):
        try:
            driver.execute_cdp_cmd("Browser.grantPermissions", {"permissions": [permission], "origin": BASE})
        except Exception as error:  # an older Chromium: the copy falls back to a selection
            step(f"no {permission} grant: {error}")

    step("the action bar is in view without scrolling, at 1280 and 375 px")
    go(HELLO)
    find("#body")
    for width in (1280, 375):
        for element_id in ("save", "unpublish", "preview-link", "bar-status"):
            in_view_unscrolled(element_id, width)
    go("/admin/collections/blog-posts/new")
    for width in (1280, 375):
        in_view_unscrolled("create", width)
    axe("the new item page", 1280)
    axe("the new item page", 375)
    console()

    step("axe-core on the edit page at 1280 and 375 px")
    go(HELLO)
    find("#body-image-choose")
    axe("the edit page", 1280)
    axe("the edit page", 375)
    headings = driver.execute_script(
        "return Array.from(document.querySelectorAll('h1')).map(h => h.textContent.trim())")
    assert headings == ["Hello, World"], f"one h1, the page's: {headings}"
    assert find("#preview h3.md-h1").text == "Hello, World", "the post's own # title is demoted"
    console()

    step("an unchanged form leaves at once; a changed one asks the browser to warn first")
    # Classic WebDriver accepts a beforeunload prompt by itself (so no alert can be seen):
    # the check is that the page's handler asks for one, as the browser's own event would.
    go(HELLO)
    find("#body")
    assert not leave_warns(), "an unchanged form does not warn"
    find("#history").click()
    wait.until(EC.url_contains("/history"))
    go(HELLO)
    find("#body").send_keys(Keys.END, " Typed and not saved.")
    assert leave_warns(), "a changed form warns before leaving"
    go(HELLO)
    find("#f-cover-choose").click()
    find(f'#f-cover-picks button[data-value="{LOGO}"]').click()
    assert leave_warns(), "a pick is a change too"
    console()

    step("keyboard only: the order of the edit page, at 1280 and 375 px")
    driver.set_window_size(375, 800)
    go(HELLO)
    find("#body-image-choose")
    tab_order("history")
    driver.set_window_size(1280, 800)
    go(HELLO)
    find("#body-image-choose")
    order = tab_order("history")
    wanted = ["f-title", "f-cover-choose", "body-image-choose", "body", "save", "publish" if "publish" in order else "unpublish",
              "preview-link", "history"]
    positions = [order.index(element_id) for element_id in wanted if element_id in order]
    assert len(positions) == len(wanted) and positions == sorted(positions), f"{wanted} in {order}"
    # The bar's buttons come straight after the text (the preview has no control).
    assert order[order.index("body") + 1] == "save", order

    step("keyboard only: Insert image opens, Escape closes it and gives the focus back")
    go(HELLO)
    find("#body").click()
    shift_tab()
    assert active_id() == "body-image-choose", active_id()
    keys(Keys.ENTER)
    panel = find("#body-image-picks")
    wait.until(lambda d: panel.is_displayed())
    assert find("#body-image-choose").get_attribute("aria-expanded") == "true"
    focused = driver.execute_script("return document.activeElement.dataset.value || document.activeElement.id")
    assert focused in (LOGO, "/media/uploads/2026/hero.png", "body-image-upload"), f"the focus went into the panel: {focused}"
    thumb = find(f'#body-image-picks button[data-value="{LOGO}"] img')
    wait.until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", thumb))
    axe("the edit page with the picker open", 1280)
    keys(Keys.ESCAPE)
    wait.until(lambda d: not panel.is_displayed())
    assert active_id() == "body-image-choose", active_id()
    assert find("#body-image-choose").get_attribute("aria-expanded") == "false"

    step("keyboard only: a pick puts the image's Markdown at the cursor")
    original = find("#body").get_attribute("value")
    # The cursor after the heading's line: Ctrl+Home, then End.
    find("#body").click()
    ctrl(Keys.HOME)
    keys(Keys.END, Keys.ENTER)
    at = driver.execute_script("return document.getElementById('body').selectionStart")
    shift_tab()
    keys(Keys.ENTER)
    find("#body-image-picks")
    for _ in range(10):
        if driver.execute_script("return document.activeElement.dataset.value") == LOGO:
            break
        keys(Keys.TAB)
    assert driver.execute_script("return document.activeElement.dataset.value") == LOGO
    keys(Keys.ENTER)
    wait.until(lambda d: active_id() == "body")
    value = find("#body").get_attribute("value")
    markdown = f"![logo]({LOGO})"
    assert value[at:at + len(markdown)] == markdown, f"at {at}: {value!r}"
    assert value[:at].rstrip("\n") == original[:at].rstrip("\n"), value
    assert value[at + len(markdown):].lstrip("\n") == original[at:].lstrip("\n").replace("\r\n", "\n"), value
    caret = driver.execute_script("return document.getElementById('body').selectionStart")
    assert caret == at + len(markdown), f"the cursor is after the image: {caret}"
    wait.until(lambda d: f'src="{LOGO}"' in find("#preview").get_attribute("innerHTML"))
    assert "Preview updated." in find("#preview-state").text

    step("Ctrl+S saves, without the leave warning")
    keys(Keys.END, " Saved with the keyboard.")
    ctrl("s")
    wait.until(EC.url_contains("?ok=saved"))
    assert markdown in find("#body").get_attribute("value")
    assert not leave_warns(), "the saved page does not warn"
    console()

    step("the media page uploads as soon as a file is chosen")
    go("/admin/media")
    assert not find("#upload").is_displayed(), "no second click with the script"
    image = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"writing-{os.getpid()}.png")
    with open(image, "wb") as out:
        out.write(png(64, 48, (29, 78, 216)))
    find("#file").send_keys(image)
    wait.until(EC.url_contains("ok=uploaded"))
    os.remove(image)
    name = os.path.basename(image)
    card = find(f'.files img[src$="/{name}?w=160"]').find_element(By.XPATH, "./ancestor::li[contains(@class, 'file')]")
    url_field = card.find_element(By.CSS_SELECTOR, 'input[id^="url-"]')
    index = url_field.get_attribute("id").split("-")[1]
    url = f"/media/uploads/{name}"
    assert url_field.get_attribute("value") == url

    step("Copy URL and Copy Markdown at a chosen size")
    copied = copied_by(f"#copy-url-{index}", f"#url-{index}")
    assert copied == url, copied
    stem = name.rsplit(".", 1)[0].replace("-", " ")
    Select(find(f"#size-{index}")).select_by_visible_text("800 px wide")
    assert find(f"#md-{index}").get_attribute("value") == f"![{stem}]({url}?w=800)"
    copied = copied_by(f"#copy-md-{index}", f"#md-{index}")
    assert copied == f"![{stem}]({url}?w=800)", copied
    Select(find(f"#size-{index}")).select_by_visible_text("Original")
    assert find(f"#md-{index}").get_attribute("value") == f"![{stem}]({url})"
    axe("the media page", 1280)
    axe("the media page", 375)
    shot("media-copy")
    console()


finish(run)
