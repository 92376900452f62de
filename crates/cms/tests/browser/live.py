"""Live changes in the editor (issue 47), in a real browser: run by
crates/cms/tests/it/admin_browser.rs (`live_changes_show_in_a_real_browser`) on a copy of
the demo site, with the environment editor.py describes and CMS_KEY, an editor's API key
that makes the changes "someone else" makes.

Steps: on the item list, an item created through the API appears without a reload
(marked as changed, and said in the status line); axe-core on the list. On the edit page,
with text typed into the form, a save by a second editor session (another user, signed in
with its own cookie) shows the notice that someone else saved; axe-core with the notice shown; its Compare button shows the saved version against
the form's, with the typed text still in the form and nothing saved.
"""

import html
import http.cookiejar
import json
import os
import re
import urllib.parse
import urllib.request

from editor import *

KEY = os.environ["CMS_KEY"]
ITEMS = "/cms/collections/posts/items"


def api(method, path, body):
    request = urllib.request.Request(
        BASE + path, method=method, data=json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        assert answer.status == 200, answer.status


class OtherSession:
    """A second editor, signed in with its own cookie jar, who saves through the forms."""

    def __init__(self, email):
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        form = self.get("/admin/signin")
        self.post("/admin/signin", {"csrf": self.input(form, "csrf"), "email": email, "password": PASSWORD,
                                    "next": "/admin/"})

    def get(self, path):
        with self.opener.open(BASE + path) as answer:
            return answer.read().decode()

    def post(self, path, fields):
        data = urllib.parse.urlencode(fields).encode()
        with self.opener.open(urllib.request.Request(BASE + path, data=data, method="POST")) as answer:
            assert answer.status == 200, answer.status  # after the redirect
            return answer.read().decode()

    @staticmethod
    def input(page, name):
        return html.unescape(re.search(f'name="{name}" value="([^"]*)"', page).group(1))

    def save(self, path, title, body):
        page = self.get(path)
        self.post(path, {"csrf": self.input(page, "csrf"), "etag": self.input(page, "etag"), "form": "model",
                         "fm.title": title, "status": "draft", "body": body, "action": "save"})


def not_reloaded():
    return driver.execute_script("return window.liveMark === 1")


def run():
    step("sign in")
    sign_in()

    step("the list shows a new item without a reload")
    go("/admin/collections/blog-posts")
    find("[data-live-list][data-live]")
    driver.execute_script("window.liveMark = 1")
    api("POST", ITEMS, {"slug": "seen-live", "date_prefix": False,
                        "fm": {"title": "Seen live", "status": "draft"}})
    row = find('tr[data-slug="seen-live"].fresh')
    assert "Seen live" in row.text, row.text
    assert not_reloaded(), "the page was not loaded again"
    wait.until(lambda _: "1 item changed" in driver.find_element(By.ID, "live-status").get_attribute("textContent"))
    axe("the live list")

    step("the edit page says that someone else saved")
    go("/admin/collections/blog-posts/items/seen-live.md")
    text = find("textarea[name=body]")
    text.send_keys("Typed here.")
    driver.execute_script("window.liveMark = 1")
    notice = driver.find_element(By.ID, "live-change")
    assert not notice.is_displayed(), "no notice before a change"
    OtherSession(EDITOR).save("/admin/collections/blog-posts/items/seen-live.md", "Their title", "Their text.\n")
    wait.until(lambda _: notice.is_displayed())
    assert "Someone else saved this item" in notice.text, notice.text
    assert not_reloaded()
    axe("the edit page with the notice")

    step("Compare shows their version against the form's")
    driver.find_element(By.ID, "compare").click()
    conflict = find("#conflict")
    assert "The saved version and yours" in conflict.text, conflict.text
    assert "Their text." in conflict.text, conflict.text
    assert "Typed here." in find("textarea[name=body]").get_attribute("value")
    axe("the comparison")


finish(run)
