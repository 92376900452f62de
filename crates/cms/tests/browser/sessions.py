"""Typed work survives the end of a session, and error pages (Chromium by Selenium).

Run by crates/cms/tests/it/admin_sessions.rs (see editor.py for the environment). Steps:
sign in as the editor, type a title and a text into a post's edit form; sign out in
another tab (the session ends); save in the first tab: the answer shows everything typed
and an inline sign-in (axe-core: nothing serious at 1280 and 375 px); sign in there: the
save is made, and the edit page shows the typed text. Then a page that does not exist
(in the layout, with a way on), and a locked sign-in: the page says how long to wait and
counts down, with the sign-in form (axe-core again). The Rust test then reads the file.
"""

from editor import *

ITEM = "/admin/collections/blog-posts/items/2026-01-12-hello-world.md"
TITLE = "Kept through a sign-out"
TEXT = "Typed in the browser while the session ended.\nSecond line, still here."


def run():
    step("sign in and type")
    sign_in(EDITOR)
    go(ITEM)
    fill("input[name='fm.title']", TITLE)
    fill("#body", TEXT)
    typing_tab = driver.current_window_handle

    step("sign out in another tab")
    driver.switch_to.new_window("tab")
    go("/admin/")
    find("#sign-out").click()
    wait.until(EC.url_contains("/admin/signin"))
    driver.close()
    driver.switch_to.window(typing_tab)

    step("save: the typed work comes back with an inline sign-in")
    find("#save").click()
    wait.until(EC.presence_of_element_located((By.ID, "signin-password")))
    assert "Sign in to keep your work" in text_of("h1")
    kept = text_of(".typed")
    assert TITLE in kept, kept
    assert "Typed in the browser while the session ended." in kept and "Second line, still here." in kept, kept
    assert active_id() == "signin-email", active_id()
    console(expected=("401",))
    axe("the kept form", serious_only=True)
    axe("the kept form", 375, serious_only=True)
    shot("kept-form")

    step("sign in inline: the save is made")
    fill("#signin-email", EDITOR)
    fill("#signin-password", PASSWORD + Keys.ENTER)
    wait.until(EC.url_contains("ok=saved"))
    assert notice() == "Saved.", notice()
    assert find("input[name='fm.title']").get_attribute("value") == TITLE
    assert find("#body").get_attribute("value").replace("\r\n", "\n").strip() == TEXT
    find("#sign-out")

    step("a page that does not exist: in the layout, with a way on")
    go("/admin/no-such-page")
    assert text_of("h1") == "Page not found"
    find("#sign-out")
    find(".ways-on a[href='/admin/']")
    console(expected=("404",))
    axe("the 404 page", serious_only=True)

    step("a locked sign-in: how long to wait, counting down")
    find("#sign-out").click()
    wait.until(EC.url_contains("/admin/signin"))
    for _ in range(6):
        before = find("input[name=password]")
        fill("input[name=email]", OWNER)
        fill("input[name=password]", "not the password" + Keys.ENTER)
        wait.until(EC.staleness_of(before))
    countdown = find("span[data-countdown]")
    assert text_of("h1") == "Too many sign-in attempts"
    first = int(countdown.get_attribute("data-countdown"))
    time.sleep(2.2)
    shown = countdown.text
    assert shown.endswith("seconds") and int(shown.split()[0]) < first, (first, shown)
    find("form.inline-signin input[name=password]")
    console(expected=("401", "429"))
    axe("the 429 page", serious_only=True)
    axe("the 429 page", 375, serious_only=True)
    shot("signin-locked")


finish(run)
