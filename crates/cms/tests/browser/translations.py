"""An item's languages in the editor, in a real browser (Chromium by Selenium).

Run by crates/cms/tests/it/admin_browser.rs against a server on a copy of
fixtures/multilingual (English, French, Arabic written right to left), with the variables
of editor.py.

Steps: open the English item, check its language switcher and the page with axe-core;
follow the switcher to the Arabic translation, whose text and preview are marked
lang="ar" dir="rtl"; axe-core. On an item without a French translation, "Translate into
Français" opens the new draft, made from the source; axe-core. Change the English source
and save: the French translation shows it is outdated, and its link shows what changed
in the source (axe-core there too); "Mark as up to date" takes the notice away.
"""

from editor import *  # noqa: F403 (the driver, sign-in, find and fill, axe-core, shots)


def run():
    step("sign in")
    sign_in()

    step("the switcher of an item in three languages, checked by axe-core")
    go("/admin/collections/posts/items/hello.md")
    current = find('#languages [aria-current="page"]')
    assert current.text == "English", current.text
    assert find('#languages a[hreflang="fr"]').text == "Français"
    axe("an item's languages")
    shot("languages")

    step("the Arabic translation runs right to left")
    find('#languages a[hreflang="ar"]').click()
    wait.until(EC.url_contains("/admin/collections/posts.ar/items/hello.ar.md"))
    body = find("#body")
    assert (body.get_attribute("lang"), body.get_attribute("dir")) == ("ar", "rtl")
    preview = find("#preview")
    assert (preview.get_attribute("lang"), preview.get_attribute("dir")) == ("ar", "rtl")
    axe("a right-to-left translation")
    shot("rtl")

    step("translate into French, from the source")
    go("/admin/collections/posts/items/only-english.md")
    find("#translate-fr").click()
    wait.until(EC.url_contains("/admin/collections/posts.fr/items/only-english.fr.md"))
    assert "Translation created" in notice()
    assert find("#body").get_attribute("value").strip() == "Not translated yet."
    assert not driver.find_elements(By.ID, "outdated")
    axe("a new translation")

    step("the source changes: the translation is outdated, and says what changed")
    go("/admin/collections/posts/items/only-english.md")
    fill("#body", "Now in English only, for a while.")
    find("#save").click()
    wait.until(EC.url_contains("?ok=saved"))
    go("/admin/collections/posts.fr/items/only-english.fr.md")
    find("#outdated")
    axe("an outdated translation")
    find("#outdated-diff").click()
    diff = find("#source-diff").text
    assert "+Now in English only, for a while." in diff, diff
    axe("the source's changes")
    driver.back()
    find("#mark-up-to-date").click()
    wait.until(EC.url_contains("?ok=up-to-date"))
    assert not driver.find_elements(By.ID, "outdated")


finish(run)
