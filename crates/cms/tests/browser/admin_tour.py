"""The web editor in a real browser: Debian's Chromium driven by Selenium.

Run by crates/cms/tests/it/admin_browser.rs against a server on a copy of the demo site,
with these environment variables:

  CMS_BASE              the server, e.g. http://127.0.0.1:40123
  CMS_OWNER, CMS_EDITOR emails of an owner and an editor; CMS_PASSWORD their password
  CMS_SCREENSHOTS       a folder for the screenshots of the main pages (docs/admin/)
  CMS_CHROMIUM, CMS_CHROMEDRIVER  the browser and its driver (default: Debian's paths)

One browser session walks the editor as a person would: sign in, create an item, edit
it and watch the preview, cause and resolve an edit conflict, restore a version, upload
an image (picker and drag and drop) and see its thumbnail, create and revoke an API key,
reach every page by keyboard, fit a 375 px screen, sign out; then an editor cannot reach
the owner pages, and a forged form without the CSRF token is refused. Any message the
browser logs as an error (a CSP violation, a script error, a failed request) fails the
run, except the refusals a step causes on purpose, which that step names.
"""

import base64
import struct
import urllib.error
import urllib.request
import zlib

from selenium.webdriver.common.action_chains import ActionChains

# The browser, its `wait`, and the shared steps (go, find, fill, console, shot, ...).
from editor import *


def sign_in(email):
    go("/admin/")
    find("input[name=email]")
    assert "/admin/signin" in driver.current_url
    fill("input[name=email]", email)
    fill("input[name=password]", PASSWORD + Keys.ENTER)
    wait.until(EC.presence_of_element_located((By.ID, "sign-out")))


def sign_out():
    find("#sign-out").click()
    wait.until(EC.url_contains("/admin/signin?out=1"))
    assert "You are signed out" in notice()


def api(path, key):
    """A REST call with an API key; returns the status."""
    request = urllib.request.Request(BASE + path, headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def png(width, height, rgb):
    """A small PNG of one color, written by hand (no imaging library needed)."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def tab_until(element_id, limit=60):
    """Presses Tab from the top of the page until `element_id` has the focus."""
    driver.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
    for _ in range(limit):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        if driver.execute_script("return document.activeElement.id") == element_id:
            return
    raise AssertionError(f"#{element_id} was not reached with the Tab key")


def fits(width=375):
    """The page has no sideways scrolling at `width` (wide tables scroll in their box)."""
    driver.set_window_size(width, 800)
    viewport, page = driver.execute_script(
        "return [window.innerWidth, document.documentElement.scrollWidth]")
    driver.set_window_size(1280, 900)
    assert viewport <= width + 20, f"the window did not shrink: {viewport}"
    assert page <= viewport, f"{driver.current_url} is {page} px wide in a {viewport} px window"


try:
    step("sign in")
    go("/admin/")
    find("input[name=email]")
    shot("signin", 900)
    sign_in(OWNER)
    assert "Collections" in driver.page_source
    shot("home")
    console()

    step("create an item, with the preview")
    find('a[href="/admin/collections/blog-posts"]').click()
    find("table.list")
    shot("items")
    find("#new-item").click()
    fill("#f-title", "A Browser Tour")
    fill("#f-tags", "tour, browser")
    fill("#body", "Hello from **Selenium**.")
    wait.until(lambda d: "<strong>Selenium</strong>" in find("#preview").get_attribute("innerHTML"))
    find("#create").click()
    wait.until(EC.url_contains("a-browser-tour.md?ok=created"))
    assert notice() == "Item created."
    item_url = driver.current_url.split("?")[0]
    console()

    step("edit, preview and save")
    body = find("#body")
    body.send_keys(Keys.END, "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    wait.until(lambda d: "<table>" in find("#preview").get_attribute("innerHTML"))
    fill("#f-author", "grace")
    find("#save").click()
    wait.until(EC.url_contains("?ok=saved"))
    assert "<table>" in find("#preview").get_attribute("innerHTML"), "the saved text is previewed"
    assert find("#f-author").get_attribute("value") == "grace"
    shot("edit")
    console()

    step("an edit conflict, shown and resolved")
    mine = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(item_url)
    fill("#f-title", "Their Title")
    find("#save").click()
    wait.until(EC.url_contains("?ok=saved"))
    driver.close()
    driver.switch_to.window(mine)
    fill("#body", "My own text, written while they saved.")
    find("#save").click()
    conflict = find("#conflict")
    assert "Someone saved this item" in conflict.text
    assert "Their Title" in conflict.text, "their fields are shown"
    assert "My own text" in find("#body").get_attribute("value"), "nothing typed is lost"
    shot("conflict")
    console(expected=["status of 409"])
    find("#save").click()  # "Save mine over theirs"
    wait.until(EC.url_contains("?ok=saved"))
    assert find("#f-title").get_attribute("value") == "A Browser Tour"
    assert "My own text" in find("#body").get_attribute("value")
    console()

    step("restore a version")
    find("#history").click()
    find("#versions")
    shot("history")
    versions = driver.find_elements(By.CSS_SELECTOR, "#versions tbody a")
    assert len(versions) >= 3, f"{len(versions)} versions"
    versions[-1].click()  # the oldest: the item as created
    find("table.diff")
    assert "Selenium" in text_of("table.diff")
    shot("diff")
    find("#restore").click()
    wait.until(EC.url_contains("?ok=restored"))
    assert "Hello from **Selenium**." in find("#body").get_attribute("value")
    console()

    step("upload images (picker and drag and drop) and see their thumbnails")
    go("/admin/media")
    image = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"tour-{os.getpid()}.png")
    with open(image, "wb") as out:
        out.write(png(96, 64, (29, 78, 216)))
    find("#file").send_keys(image)  # uploaded at once: no Upload button with the script
    wait.until(EC.url_contains("ok=uploaded"))
    name = os.path.basename(image)
    thumb = find(f'.files img[src$="/{name}?w=160"]')
    wait.until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", thumb) == 96)
    os.remove(image)
    dropped = base64.b64encode(png(40, 40, (6, 118, 71))).decode()
    driver.execute_script(
        """
        const bytes = Uint8Array.from(atob(arguments[0]), c => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], "dropped.png", {type: "image/png"}));
        const zone = document.querySelector("[data-dropzone]");
        for (const kind of ["dragenter", "dragover", "drop"]) {
          zone.dispatchEvent(new DragEvent(kind, {dataTransfer: transfer, bubbles: true, cancelable: true}));
        }
        """,
        dropped,
    )
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '.files img[src$="/dropped.png?w=160"]'))
    thumb = find('.files img[src$="/dropped.png?w=160"]')
    wait.until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", thumb) == 40)
    shot("media")
    console()

    step("create an API key, copy it, use it, revoke it")
    go("/admin/keys")
    fill("#key-name", "browser tour")
    find("#create-key").click()
    key = find("#new-key").get_attribute("value")
    assert key.startswith("api_") and len(key) == 68, key
    find("#copy-key").click()
    wait.until(lambda d: find('[data-copied="new-key"]').text != "")
    assert api("/cms/collections/blog-posts/items?status=all", key) == 200
    shot("keys")
    revoke = None
    for link in driver.find_elements(By.CSS_SELECTOR, "#keys a.danger"):
        if "browser tour" in link.find_element(By.XPATH, "./ancestor::tr").text:
            revoke = link
            break
    assert revoke, "the new key is listed"
    revoke.click()  # a confirmation first
    assert "browser tour" in text_of("h1")
    find("#confirm").click()
    wait.until(EC.url_contains("ok=key-revoked"))
    assert "browser tour" not in text_of("main")
    assert api("/cms/collections/blog-posts/items?status=all", key) == 401, "a revoked key stops at once"
    console()

    step("a webhook: add, a delivery in the log, disable, clear the log, remove")
    go("/admin/webhooks")
    fill("#hook-url", "https://127.0.0.1:9/cms-hook")
    find('input[value="file.updated"]').click()
    find("#add-webhook").click()
    assert find("#new-secret").get_attribute("value").startswith("whsec_")
    driver.get(item_url)
    find("#save").click()  # a file.updated event; nothing listens on port 9, so it fails
    wait.until(EC.url_contains("?ok=saved"))
    go("/admin/webhooks")
    def delivery_logged(d):
        d.refresh()
        return any("refused" in table.text for table in d.find_elements(By.ID, "delivery-log"))

    WebDriverWait(driver, 15).until(delivery_logged)
    shot("webhooks")
    find("#webhooks button[value=disable]").click()
    wait.until(EC.url_contains("ok=webhook-disabled"))
    assert "disabled" in text_of("#webhooks")
    find("#clear-log").click()  # a confirmation first
    find("#confirm").click()
    wait.until(EC.url_contains("ok=log-cleared"))
    assert "No deliveries yet." in text_of("main")
    find("#webhooks a.danger").click()  # a confirmation first
    find("#confirm").click()
    wait.until(EC.url_contains("ok=webhook-removed"))
    assert "None yet." in text_of("main")
    console()

    step("the other owner pages")
    for path, name in (("/admin/theme", "theme"), ("/admin/users", "users")):
        go(path)
        find("main h1")
        shot(name)
        console()

    step("keyboard and small screens")
    driver.get(item_url)
    tab_until("save")
    go("/admin/media")
    tab_until("file")
    for path in ("/admin/", "/admin/collections/blog-posts", item_url.replace(BASE, ""), "/admin/media", "/admin/keys"):
        go(path)
        find("main")
        fits(375)
    driver.get(item_url)
    find("#body")
    if SHOTS:
        driver.set_window_size(375, 800)
        driver.save_screenshot(os.path.join(SHOTS, "edit-375.png"))
        driver.set_window_size(1280, 900)
    console()

    step("a forged form without the CSRF token is refused")
    driver.execute_script(
        """
        const form = document.createElement("form");
        form.method = "post";
        form.action = "/admin/collections/blog-posts/new";
        for (const [name, value] of [["title", "Forged"], ["status", "published"], ["body", "x"]]) {
          const input = document.createElement("input");
          input.name = name;
          input.value = value;
          form.append(input);
        }
        document.body.append(form);
        form.submit();
        """
    )
    wait.until(lambda d: "security token" in d.page_source)
    go("/admin/collections/blog-posts?q=forged")
    assert "No items match." in text_of("main")
    console(expected=["status of 403"])

    step("sign out")
    sign_out()
    go("/admin/keys")
    wait.until(EC.url_contains("/admin/signin?next="))
    console()

    step("an editor cannot reach the owner pages")
    sign_in(EDITOR)
    nav = text_of("header nav")
    assert "API keys" not in nav and "Webhooks" not in nav and "Users" not in nav, nav
    for path in ("/admin/keys", "/admin/webhooks", "/admin/theme", "/admin/users"):
        go(path)
        assert "Not allowed" in text_of("h1"), path
    console(expected=["status of 403"])
    go("/admin/collections/blog-posts")
    find("table.list")
    sign_out()
    console()
    step("done")
finally:
    driver.quit()
