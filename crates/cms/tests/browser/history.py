"""Deleted items come back, and history that reads (issue 36), in a real browser.

Run by crates/cms/tests/it/admin_history.rs (see editor.py for the environment). Steps, as
an editor: delete a page, and Undo in the notice brings it back; delete it again, open the
collection's Deleted view, the item's history and a version's diff (its lines marked −, and
a change's + and −), and Restore it from the Deleted view. axe-core checks the Deleted view,
the history and the diff at 1280 and 375 px (no violation at all), and that nothing
scrolls sideways at 375 px; at 375 px the diff is one column whose text is
not squeezed into a narrow one.
"""

from editor import *

ABOUT = "/admin/collections/pages/items/about.md"


def delete_about():
    go(ABOUT + "/delete")
    find("#confirm").click()
    wait.until(lambda d: "ok=deleted" in d.current_url)


def check_pages(where):
    """axe-core at 1280 and 375 px, and at 375 px nothing scrolls sideways."""
    for width in (1280, 375):
        axe(where, width)
    driver.set_window_size(375, 800)
    page, viewport, wide = driver.execute_script(
        """
        const wide = [...document.querySelectorAll(".table-wrap")]
          .filter((box) => box.scrollWidth > box.clientWidth + 1)
          .map((box) => box.querySelector("table").id || box.querySelector("table").className);
        return [document.documentElement.scrollWidth, window.innerWidth, wide];
        """
    )
    driver.set_window_size(1280, 900)
    assert page <= viewport and not wide, f"{where} at 375 px: {page} px wide, scrolling {wide}"


def run():
    sign_in(EDITOR)

    step("a change, so that the history has a + and a −")
    go(ABOUT)
    body = find("textarea[name=body]")
    body.send_keys(Keys.CONTROL, Keys.END)
    body.send_keys("\nA line added in the browser.")
    find("#save").click()
    wait.until(lambda d: "ok=" in d.current_url)

    step("delete, then Undo in the notice")
    delete_about()
    assert "Item deleted." in notice(), notice()
    shot("deleted-undo")
    find("#undo-delete").click()
    wait.until(lambda d: "ok=undeleted" in d.current_url)
    assert "Item restored from its history." in notice(), notice()
    assert "A line added in the browser." in find("textarea[name=body]").get_attribute("value")

    step("delete again, open the Deleted view")
    delete_about()
    find("#deleted-items").click()
    wait.until(lambda d: d.current_url.endswith("/admin/collections/pages/deleted"))
    rows = driver.find_elements(By.CSS_SELECTOR, "#deleted tbody tr")
    assert len(rows) == 1 and "about.md" in rows[0].text, [r.text for r in rows]
    assert EDITOR in rows[0].text, rows[0].text
    check_pages("the Deleted view")
    shot("deleted")

    step("its history and a diff")
    rows[0].find_element(By.PARTIAL_LINK_TEXT, "History").click()
    find("#versions")
    assert "History of “About”" in text_of("h1"), text_of("h1")
    assert driver.title.startswith("History of About"), driver.title
    check_pages("a deleted item's history")
    shot("history-deleted")
    # The newest version is the deleted text: against nothing, each line is removed.
    find("#versions tbody tr a").click()
    find("table.diff")
    marks = {m.text for m in driver.find_elements(By.CSS_SELECTOR, "table.diff .mark") if m.text}
    assert marks == {"−"}, marks
    said = driver.execute_script(
        "return [...document.querySelectorAll('table.diff .sr-only')].map(e => e.textContent)")
    assert "removed: " in said, said
    check_pages("a deleted item's diff")
    # The older version (before the change) against the newest: + and − both.
    driver.back()
    links = driver.find_elements(By.CSS_SELECTOR, "#versions tbody tr a")
    assert len(links) >= 2, len(links)

    step("restore from the Deleted view")
    go("/admin/collections/pages/deleted")
    find("#deleted button[type=submit]").click()
    wait.until(lambda d: "ok=undeleted" in d.current_url)
    assert "A line added in the browser." in find("textarea[name=body]").get_attribute("value")

    step("the diff of a change: markers, and one column on a phone")
    go(ABOUT + "/history")
    older = driver.find_elements(By.CSS_SELECTOR, "#versions tbody tr a")[-1]
    older.click()
    find("table.diff")
    marks = {m.text for m in driver.find_elements(By.CSS_SELECTOR, "table.diff .mark") if m.text}
    assert "+" in marks, marks
    assert driver.title.startswith("About: version of"), driver.title
    widths = driver.execute_script(
        "return [...document.querySelectorAll('table.diff tr:first-child td')].map(td => td.getBoundingClientRect().width)")
    assert widths[1] > 3 * widths[0], f"line numbers narrow, text wide: {widths}"
    outside = driver.execute_script(
        """
        return [...document.querySelectorAll('table.diff .mark')].filter((mark) => {
          if (!mark.textContent) return false;
          const range = document.createRange();
          range.selectNodeContents(mark);
          const glyph = range.getBoundingClientRect(), cell = mark.closest('td').getBoundingClientRect();
          return glyph.left < cell.left || glyph.right > cell.right;
        }).length;
        """
    )
    assert outside == 0, f"{outside} markers drawn outside their cell"
    shot("history-diff")
    check_pages("a change's diff")
    driver.set_window_size(375, 800)
    text_widths = driver.execute_script(
        "return [...document.querySelectorAll('table.diff td.line')].filter(td => td.offsetParent)"
        ".map(td => td.getBoundingClientRect().width)")
    assert text_widths and min(text_widths) > 200, f"one wide column at 375 px: {text_widths}"
    shot("history-diff-375", 375)
    driver.set_window_size(1280, 900)


finish(run)
