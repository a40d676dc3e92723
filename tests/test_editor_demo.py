"""The editor on the simulated node (``mambaconsole --demo``'s first run, which ends OOM), driven
by Pilot: the pre-flight verdict predicts the memory (issue 18) and warns that a run with the
same arguments ended OOM (run id and exit code read off the node's run store); the footer shows
the editor's own keys; one wording for "not given"; the parser's whole help text is shown."""

from __future__ import annotations

from fixtures.screen import shown
import pytest
from textual.widgets import Footer

from fixtures.console import wait_until
from test_demo_console import demo_app, open_editor

pytestmark = pytest.mark.timeout(240)


async def test_preflight_on_the_argv_that_ran_out_of_memory(demo_home):
    demo, app = demo_app(demo_home)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: app.state.status == "oom", timeout=60, what="the OOM")
        await wait_until(pilot, lambda: app.state.run.exit_code is not None, timeout=30, what="the exit code")
        failed = app.state.run
        ed = await open_editor(pilot, app)

        # the footer is the editor's: its keys, not the main screen's
        footer = ed.query_one(Footer)
        await pilot.pause(0.2)
        keys = " ".join(str(k.description) for k in footer.query("FooterKey"))
        assert "Pre-flight" in keys and "Relaunch" in keys, keys
        assert "Filter" not in keys and "Quit" not in keys, keys

        # one wording for a field the argv does not give
        texts = []
        for sel in ed.query("Select"):
            if sel.value is sel.BLANK or sel.is_blank():
                texts.append(str(sel.prompt))
        for inp in ed.query("Input"):
            if inp.value == "":
                texts.append(str(inp.placeholder))
        for st in ed.query(".state"):
            if not st.has_class("-on"):
                texts.append(shown(st))
        assert texts and all("not given · default " in t for t in texts), texts
        assert not any("(not given" in t or "(default" in t for t in texts), texts

        # the parser's whole help for --mamba-backend (wrapped, not cut)
        opt = next(p for p in ed.params if "--mamba-backend" in p["option_strings"])
        helps = [h for h in ed.query(".help") if opt["help"].strip() == shown(h).strip()]
        assert helps, "the --mamba-backend help is shown whole"
        assert helps[0].size.height >= 2 or len(opt["help"]) <= helps[0].size.width

        # pre-flight the unchanged argv: arguments OK, the memory predicted to fail in the Mamba
        # pool (the numbers for the seed), a cap that fits, and the OOM run named
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: ed.verdict is not None and ed.verdict_for == ed.edited_args(), what="pre-flight")
        verdict = shown(ed.query_one("#ed-verdict"))
        assert "PRE-FLIGHT OK" not in verdict
        assert "SGLang accepts them" in verdict and "memory is not checked" not in verdict, verdict
        assert "predicted: out of memory allocating the Mamba pool: needs 9.6 GiB, 8.0 free; --max-mamba-cache-size " \
            in verdict, verdict
        assert f"run {failed.run_id} with these arguments ended: OOM exit {failed.exit_code}" in verdict, verdict
        assert not ed.query_one("#ed-go").disabled  # a warning, not a refusal: relaunch stays possible
        # an edited argv is not the one that failed: no warning, and it is predicted to fit
        ed.query_one("#f-max_mamba_cache_size").value = "24"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: ed.verdict is not None and ed.verdict_for == ed.edited_args(), what="pre-flight")
        verdict = shown(ed.query_one("#ed-verdict"))
        assert "with these arguments ended" not in verdict, verdict
        assert "predicted: fits: " in verdict and "24 Mamba slots, 4 requests" in verdict, verdict
