"""The cockpit shows what the crews spend: a measurement written by another process (a
crew's Stop hook) reaches the Crew panel's Spend column and the header's total while the
cockpit runs; each attempt's recorded spend is in the Work panel's foot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cockpit import Cockpit, crew, drive, until

from state.crew import spend
from state.home import Home
from state.work import ledger, spent

pytestmark = pytest.mark.usefixtures("private_config")  # support/cockpit_env.py


def transcript(path: Path, turns: list[tuple[str, int, int]]) -> Path:
    with path.open("a") as f:
        for mid, i, o in turns:
            usage = {"input_tokens": i, "output_tokens": o}
            message = {"id": mid, "model": "claude-sonnet-4-5", "usage": usage}
            f.write(json.dumps({"type": "assistant", "message": message}) + "\n")
    return path


def test_spend_reaches_the_crew_column_the_header_and_the_work_foot(
    home: Home, project: Path, tmp_path: Path
):
    jack = crew(home, "Jack", project=project)
    crew(home, "Kim", project=project, owns=["docs"])
    app = Cockpit(home, run_doorbell=False)
    t = tmp_path / "jack.jsonl"

    def cell(key: str) -> str:
        table = app.query_one("#crew").table
        return str(table.get_cell(key, "spend"))

    async def scenario(pilot):
        await until(pilot, lambda: app.view.crew("jack"), what="Jack's row")
        assert cell("jack") == "—" and "spent" not in app.sub_title
        # Jack's hook measures a turn (another process would; the file is what matters)
        spend.measure(
            home,
            "jack",
            jack.assignment_id,
            "claude",
            str(transcript(t, [("m1", 100_000, 20_000)])),
        )
        await until(pilot, lambda: cell("jack") == "$0.60", what="Jack's spend in the column")
        assert "3 crew" not in app.sub_title and "· spent $0.60 ·" in app.sub_title
        assert cell("kim") == "—"
        # a second turn: the column and the total follow
        spend.measure(
            home, "jack", jack.assignment_id, "claude", str(transcript(t, [("m2", 0, 100_000)]))
        )
        await until(pilot, lambda: cell("jack") == "$2.10", what="the second turn")
        assert "· spent $2.10 ·" in app.sub_title
        # on the record: the Work panel's foot says the attempt's figure
        spent.record(
            home,
            jack.assignment_id,
            spend.assignment_spend(home, "jack", jack.assignment_id),
            actor="Jack",
        )
        work = app.query_one("#work")
        work_id = ledger.work_id_for_assignment(jack.assignment_id)
        await until(
            pilot,
            lambda: any(r.work_id == work_id and any(r.spent) for r in work.rows()),
            what="the attempt's spend in the Work row",
        )
        work.table.move_cursor(row=[r.work_id for r in work.rows()].index(work_id))
        await until(pilot, lambda: "spend g1 $2.10" in str(work.border_subtitle), what="the foot")

    drive(app, scenario)


def test_the_spend_column_says_the_budget_and_where_the_spend_stands(
    home: Home, project: Path, tmp_path: Path
):
    """With a budget the cell is spend/budget, coloured by the one rule the gate follows
    (``budget.standing``): plain under 80 %, amber from 80 %, red once reached (the crew's
    tool calls are refused); a budget raised by ``tell --budget-usd`` shows at once."""
    from state.crew import protocol

    jack = crew(home, "Jack", project=project, budget_usd=1.0)
    app = Cockpit(home, run_doorbell=False)
    t = tmp_path / "jack.jsonl"

    def cell() -> tuple[str, str]:
        text = app.query_one("#crew").table.get_cell("jack", "spend")
        return str(text), str(text.style)

    def colour(name: str) -> str:
        return str(app.theme_variables[name])

    async def scenario(pilot):
        await until(pilot, lambda: cell()[0] == "—/$1", what="the budget before any spend")
        spend.measure(
            home, "jack", jack.assignment_id, "claude", str(transcript(t, [("m1", 100_000, 0)]))
        )  # $0.30: under 80 %
        await until(pilot, lambda: cell()[0] == "$0.30/$1", what="the spend against it")
        assert colour("warning") not in cell()[1] and colour("error") not in cell()[1]
        spend.measure(
            home, "jack", jack.assignment_id, "claude", str(transcript(t, [("m2", 0, 36_000)]))
        )  # + $0.54 = $0.84: 80 % or more
        await until(pilot, lambda: cell()[0] == "$0.84/$1", what="near the budget")
        assert colour("warning") in cell()[1]
        spend.measure(
            home, "jack", jack.assignment_id, "claude", str(transcript(t, [("m3", 0, 20_000)]))
        )  # + $0.30 = $1.14: reached
        await until(pilot, lambda: cell()[0] == "$1.14/$1", what="past the budget")
        assert colour("error") in cell()[1]
        protocol.set_budget(home, "Jack", 2.5, assignment_id=jack.assignment_id)
        await until(pilot, lambda: cell()[0] == "$1.14/$2.5", what="the raised budget")
        assert colour("error") not in cell()[1] and colour("warning") not in cell()[1]

    drive(app, scenario)
