"""Accessible by construction (issue 36): every page of the editor passes axe-core at
1280 and 375 px, the focus outline survives forced colours, the navigation folds on a
phone, and tables stack into cards instead of scrolling sideways.

Run by crates/cms/tests/it/admin_access.rs against a copy of the demo site with an owner
(see editor.py for the environment).
"""

from selenium.webdriver.common.action_chains import ActionChains

from editor import *

ITEM = "/admin/collections/pages/items/about.md"


def axe_page(path, where):
    """axe-core on `path` at both widths: no serious or critical violation."""
    go(path)
    find("main")
    for width in (1280, 375):
        axe(where, width, serious_only=True)


def no_sideways_scroll(where):
    """At 375 px neither the page nor any table box scrolls sideways."""
    driver.set_window_size(375, 800)
    page, viewport, boxes = driver.execute_script(
        """
        const wide = [...document.querySelectorAll(".table-wrap")]
          .filter((box) => box.scrollWidth > box.clientWidth + 1)
          .map((box) => box.querySelector("table").id || box.querySelector("table").className);
        return [document.documentElement.scrollWidth, window.innerWidth, wide];
        """
    )
    driver.set_window_size(1280, 900)
    assert page <= viewport, f"{where} is {page} px wide in a {viewport} px window"
    assert not boxes, f"{where}: these tables scroll sideways at 375 px: {boxes}"


def run():
    step("sign in; an item saved once, so that it has a history")
    sign_in(OWNER)
    go(ITEM)
    find("#save").click()
    wait.until(EC.url_contains("ok=saved"))
    go(ITEM + "/history")
    diff = find("#versions tbody a").get_attribute("href").replace(BASE, "")

    step("a key, a webhook and a share link, so that their pages have rows")
    go("/admin/keys")
    fill("#key-name", "site build")
    find("#create-key").click()
    find("#new-key")
    revoke = find("#keys a.danger").get_attribute("href").replace(BASE, "")
    go("/admin/webhooks")
    fill("#hook-url", "https://hooks.example.com/cms")
    find('input[value="file.updated"]').click()
    find("#add-webhook").click()
    find("#new-secret")
    go("/admin/webhooks")
    remove_hook = find("#webhooks a.danger").get_attribute("href").replace(BASE, "")
    console()

    step("axe-core on every page at 1280 and 375 px")
    pages = [
        ("/admin/", "home"),
        ("/admin/collections/blog-posts", "the item list"),
        ("/admin/collections/pages?status=scheduled", "the item list, scheduled"),
        ("/admin/collections/blog-posts/new", "a new item"),
        (ITEM, "the edit page"),
        (ITEM + "/history", "history"),
        (diff, "a diff"),
        (ITEM + "/delete", "the delete confirmation"),
        (ITEM + "/share", "the share form"),
        ("/admin/media", "media"),
        ("/admin/users", "users"),
        ("/admin/users/remove?email=owner%40example.com", "the user removal confirmation"),
        ("/admin/keys", "keys"),
        (revoke, "the key revocation confirmation"),
        ("/admin/webhooks", "webhooks"),
        (remove_hook, "the webhook removal confirmation"),
        ("/admin/webhooks/log/clear", "the delivery log clearing confirmation"),
        ("/admin/theme", "theme"),
        ("/admin/no-such-page", "a 404"),
    ]
    for path, where in pages:
        axe_page(path, where)
    go(ITEM + "/share")
    find("#confirm").click()
    find("#preview-link")
    for width in (1280, 375):
        axe("the share link", width, serious_only=True)
    shot("share")
    console(expected=["status of 404"])

    step("tables stack into cards at 375 px: nothing scrolls sideways")
    for path in ("/admin/collections/blog-posts", "/admin/keys", "/admin/webhooks", "/admin/users"):
        go(path)
        find("table.list")
        no_sideways_scroll(path)
        shot(path.rsplit("/", 1)[-1] + "-375", 375)
    go("/admin/users")
    driver.set_window_size(375, 800)
    label = driver.execute_script(
        "return getComputedStyle(document.querySelector('#users td[data-label]'), '::before').content")
    assert label == '"Email"', f"a cell is labelled with its column: {label}"
    if SHOTS:
        driver.save_screenshot(os.path.join(SHOTS, "users-375.png"))
    driver.set_window_size(1280, 900)

    step("the navigation folds behind Menu at 375 px, and opens without the script")
    go("/admin/")
    driver.set_window_size(375, 800)
    height = driver.execute_script("return document.querySelector('header.top').getBoundingClientRect().height")
    assert height <= 80, f"the header is {height} px tall at 375 px"
    assert not find("header nav").is_displayed(), "folded"
    if SHOTS:
        driver.save_screenshot(os.path.join(SHOTS, "home-375.png"))
    find("details.menu summary").click()
    wait.until(lambda d: find("header nav").is_displayed())
    if SHOTS:
        driver.save_screenshot(os.path.join(SHOTS, "menu-375.png"))
    find('header nav a[href="/admin/keys"]').click()
    wait.until(EC.url_contains("/admin/keys"))
    driver.set_window_size(1280, 900)
    assert not find("details.menu").is_displayed() and find("header nav").is_displayed(), "wide: no Menu"

    step("the focus outline survives forced colours")
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "forced-colors", "value": "active"}]})
    for path in ("/admin/", "/admin/keys"):
        go(path)
        find("main")
        driver.execute_script("document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)")
        for presses in range(1, 7):
            ActionChains(driver).send_keys(Keys.TAB).perform()
            tag, style, width = driver.execute_script(
                """
                const focused = document.activeElement, css = getComputedStyle(focused);
                return [focused.tagName, css.outlineStyle, parseFloat(css.outlineWidth)];
                """
            )
            assert tag in ("A", "BUTTON", "SUMMARY", "INPUT", "SELECT"), f"{path}: Tab {presses} reached {tag}"
            assert style != "none" and width >= 2, f"{path}: {tag} focused without an outline ({style}, {width}px)"
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    console()

    step("the sign-in page, signed out")
    find("#sign-out").click()
    wait.until(EC.url_contains("/admin/signin"))
    for width in (1280, 375):
        axe("sign-in", width, serious_only=True)
    console()


finish(run)
