"""``make eval-truth``: is a `success` backed, and does it answer what was asked?

Labelled cases (``benchmarks/eval_truth/``: ``tuning.json`` and ``heldout.json``, written from the user's
side by someone who had not read the code; the held-out part is never used for tuning) go to a real
``master-agent serve`` on the embedded Postgres, offline model, the service's clock at
``MASTER_AGENT_NOW`` (2026-11-25; 2026-11-26 for batch 4 and 2026-11-27 for batch 5, each a service of its own): goals over ``POST /api/cs/strategic-goals``, chat over
``POST /chat/stream`` (a follow-up in the thread of the case it follows). Each answer is read back
from the API and judged against the case:

- its kind (answer, no_data, success, partial, clarify, out_of_scope, error);
- for a data answer, the number against the case's own SQL run on the tenant's rows, and the window;
- for a goal, the store, the target (absolute, relative, points, multiple) and the deadline.

Printed per part: false-success rate (an answer or `success` that is not backed: wrong kind, number,
window, store or target; goal 0), correct-window rate (goal 100%), and accuracy per expected kind.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
from benchmarks.service import exit_on_signals, serving
from benchmarks.truth_parts import PartsScore, score_parts
from psycopg.rows import dict_row

CASES_DIR = Path(__file__).with_name("eval_truth")
PARTS = (
    "tuning",
    "heldout",
    "tuning3",
    "heldout3",
    "tuning4",
    "heldout4",
    "tuning5",
    "heldout5",
    "tuning6",
    "heldout6",
    "tuning7",
    "heldout7",
    "tuning8",
    "heldout8",
    "tuning9",
    "heldout9",
    "tuning10",
    "heldout10",
    "tuning11",
    "heldout11",
    "tuning12",
    "heldout12",
    "tuning13",
    "heldout13",
)
#: Parts nobody tunes on: reported as totals only.
HELD_OUT = frozenset(
    {
        "heldout",
        "heldout3",
        "heldout4",
        "heldout5",
        "heldout6",
        "heldout7",
        "heldout8",
        "heldout9",
        "heldout10",
        "heldout11",
        "heldout12",
        "heldout13",
    }
)
#: The service's clock during the evaluation (the cases' "today"); batch 4 was written a day later,
#: batch 5 two days later (README-fifth-batch.md), batch 6 three (README-sixth-batch.md), batch 7 four
#: (README-seventh-batch.md, a Sunday), batch 8 five (README-eighth-batch.md, a Monday), batch 9 six
#: (README-ninth-batch.md, a Tuesday), batch 10 seven (README-tenth-batch.md, a Wednesday), batch 11 eight
#: (README-eleventh-batch.md, a Thursday), batch 12 nine (README-twelfth-batch.md, a Friday), batch 13 ten
#: (README-thirteenth-batch.md, a Saturday).
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
CLOCKS = {
    "tuning4": datetime(2026, 11, 26, 12, 0, tzinfo=UTC),
    "heldout4": datetime(2026, 11, 26, 12, 0, tzinfo=UTC),
    "tuning5": datetime(2026, 11, 27, 12, 0, tzinfo=UTC),
    "heldout5": datetime(2026, 11, 27, 12, 0, tzinfo=UTC),
    "tuning6": datetime(2026, 11, 28, 12, 0, tzinfo=UTC),
    "heldout6": datetime(2026, 11, 28, 12, 0, tzinfo=UTC),
    "tuning7": datetime(2026, 11, 29, 12, 0, tzinfo=UTC),
    "heldout7": datetime(2026, 11, 29, 12, 0, tzinfo=UTC),
    "tuning8": datetime(2026, 11, 30, 12, 0, tzinfo=UTC),
    "heldout8": datetime(2026, 11, 30, 12, 0, tzinfo=UTC),
    "tuning9": datetime(2026, 12, 1, 12, 0, tzinfo=UTC),
    "heldout9": datetime(2026, 12, 1, 12, 0, tzinfo=UTC),
    "tuning10": datetime(2026, 12, 2, 12, 0, tzinfo=UTC),
    "heldout10": datetime(2026, 12, 2, 12, 0, tzinfo=UTC),
    "tuning11": datetime(2026, 12, 3, 12, 0, tzinfo=UTC),
    "heldout11": datetime(2026, 12, 3, 12, 0, tzinfo=UTC),
    "tuning12": datetime(2026, 12, 4, 12, 0, tzinfo=UTC),
    "heldout12": datetime(2026, 12, 4, 12, 0, tzinfo=UTC),
    "tuning13": datetime(2026, 12, 5, 12, 0, tzinfo=UTC),
    "heldout13": datetime(2026, 12, 5, 12, 0, tzinfo=UTC),
}
DATA_SCHEMA = "tenant_demo_retail"
#: Kinds that claim the question was answered.
CLAIMS = {"answer", "success"}


@dataclass
class Verdict:
    case: dict[str, Any]
    part: str
    kind: str
    problems: list[str] = field(default_factory=list)
    window_checked: bool = False
    window_right: bool = False
    detail: str = ""
    parts: PartsScore | None = None
    """A compound case's parts (batch 13), None for a one-figure case."""

    @property
    def expected(self) -> str:
        return str(self.case["expect"]["kind"])

    @property
    def correct(self) -> bool:
        return self.kind == self.expected and not self.problems

    @property
    def false_success(self) -> bool:
        return self.kind in CLAIMS and not self.correct


def load_cases(part: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((CASES_DIR / f"{part}.json").read_text())
    return cases


# -- talking to the service ----------------------------------------------------------------------


async def chat(http: httpx.AsyncClient, text: str, thread_id: str | None) -> tuple[str, dict[str, Any], bool]:
    body: dict[str, Any] = {"message": text, **({"thread_id": thread_id} if thread_id else {})}
    thread = thread_id
    async with http.stream("POST", "/chat/stream", json=body) as response:
        if response.status_code != 200:
            return thread or "", {"error": f"/chat/stream answered {response.status_code}"}, False
        name = ""
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line[7:].strip()
            elif line.startswith("data: ") and name == "metadata" and thread is None:
                thread = json.loads(line[6:]).get("thread_id")
    assert thread is not None
    state = (await http.get(f"/threads/{thread}/state")).json()
    waiting = bool(state.get("interrupts")) or any(
        task.get("interrupts") for task in state.get("tasks") or []
    )
    return thread, state.get("values") or {}, waiting


async def goal(http: httpx.AsyncClient, text: str) -> dict[str, Any]:
    accepted = await http.post("/api/cs/strategic-goals", json={"goal": text})
    if accepted.status_code != 202:
        return {"status": "refused", "http": accepted.status_code, "detail": accepted.text[:300]}
    link = accepted.json()["links"]["self"]
    for _ in range(600):
        answer: dict[str, Any] = (await http.get(link)).json()
        if answer.get("status") not in ("pending", "running"):
            return answer
        await asyncio.sleep(0.25)
    return {"status": "timeout"}


# -- reading an answer ---------------------------------------------------------------------------


def solution_kind(
    solution: dict[str, Any] | None, status: str | None, handoff: dict[str, Any] | None = None
) -> str:
    if status == "interrupted":
        return "clarify"
    handoff = handoff or (solution or {}).get("handoff") or {}
    if handoff.get("kind") == "out_of_scope":
        return "out_of_scope"
    if handoff.get("kind") == "question":
        return "clarify"
    return {"success": "success", "partial": "partial"}.get(str(status), "error")


def chat_kind(values: dict[str, Any], interrupted: bool = False) -> str:
    if interrupted:
        return "clarify"
    reply = values.get("reply") or {}
    kind = reply.get("kind")
    if values.get("clarifying") or kind == "clarification":
        return "clarify"
    if kind == "query":
        data = reply.get("data") or {}
        if data.get("outcome") == "answer" and reply.get("status") != "success":
            return "partial"  # an answer its verification did not back
        if data.get("outcome"):
            return str(data["outcome"])
        if reply.get("status") == "success" and data.get("value") is not None:
            return "answer"
        return "partial"
    if kind == "agent":
        handoff = (values.get("envelope") or {}).get("handoff")
        return solution_kind(values.get("solution"), reply.get("status"), handoff)
    return "error" if reply.get("status") == "error" else str(kind or "none")


def _day(value: str) -> date:
    return datetime.fromisoformat(value).astimezone(UTC).date()


def check_window(verdict: Verdict, window: dict[str, Any] | None) -> None:
    expected = verdict.case["expect"].get("window")
    if not expected or verdict.expected not in ("answer", "no_data"):
        return
    verdict.window_checked = True
    if not window or not window.get("start") or not window.get("end"):
        verdict.problems.append("no window stated")
        return
    start = _day(window["start"])
    last = (datetime.fromisoformat(window["end"]).astimezone(UTC) - timedelta(seconds=1)).date()
    want = (date.fromisoformat(expected["start"]), date.fromisoformat(expected["end"]))
    verdict.window_right = (start, last) == want
    if not verdict.window_right:
        verdict.problems.append(f"window {start}..{last}, asked {want[0]}..{want[1]}")


def check_value(verdict: Verdict, value: Any, truth: float | None) -> None:
    if verdict.expected != "answer" or verdict.kind != "answer":
        return
    if truth is None:
        verdict.problems.append("the case's SQL found no value")
        return
    if value is None or abs(float(value) - truth) > max(1e-4, 1e-6 * abs(truth)):
        verdict.problems.append(f"value {value}, rows say {truth:.6g}")


def said_groups(data: dict[str, Any]) -> dict[str, Any] | None:
    """The groups a reply gives their own figures: its breakdown, or a ranking's leader alone."""
    breakdown = data.get("breakdown") or {}
    if isinstance(breakdown.get("values"), dict):
        return {str(key): value for key, value in breakdown["values"].items()}
    leader = data.get("leader") or {}
    if len(leader) == 1:
        return {str(next(iter(leader.values()))): data.get("value")}
    return None


async def check_groups(verdict: Verdict, conn: psycopg.AsyncConnection[Any], data: dict[str, Any]) -> None:
    """Batch 11's ``expect.groups``: every group the answer should give, each with its figure. Two
    populations are keyed in the reply's own words, so they are matched by their figures (the top-level
    value, first minus second, tells them apart)."""
    groups = verdict.case["expect"].get("groups")
    if not groups or verdict.expected != "answer" or verdict.kind != "answer":
        return
    said = said_groups(data)
    if said is None:
        verdict.problems.append(f"no figure per {groups['by']}")
        return
    truths = {str(item["key"]): await truth_of(conn, item["value_sql"]) for item in groups["values"]}
    if groups["by"] == "population":
        mine = sorted(float(v) for v in said.values() if v is not None)
        wanted = sorted(v for v in truths.values() if v is not None)
        if len(mine) != len(wanted) or any(
            abs(a - b) > max(1e-4, 1e-6 * abs(b)) for a, b in zip(mine, wanted, strict=False)
        ):
            verdict.problems.append(f"populations {mine}, rows say {wanted}")
        return
    if set(said) != set(truths):
        verdict.problems.append(f"{groups['by']} groups {sorted(said)}, asked {sorted(truths)}")
        return
    for key, truth in truths.items():
        if truth is not None and (
            said[key] is None or abs(float(said[key]) - truth) > max(1e-4, 1e-6 * abs(truth))
        ):
            verdict.problems.append(f"{groups['by']} {key}: {said[key]}, rows say {truth:.6g}")


def check_goal(verdict: Verdict, solution: dict[str, Any] | None) -> None:
    expect = verdict.case["expect"]
    if verdict.kind != "success" or not solution:
        return
    outcome = solution.get("expected_outcome") or {}
    store = expect.get("store_id")
    if store is not None and outcome.get("store_id") != store:
        verdict.problems.append(f"store {outcome.get('store_id')}, asked {store}")
    target = expect.get("target")
    if not target:
        return
    baseline, got = outcome.get("baseline"), outcome.get("target")
    if not isinstance(baseline, int | float) or not isinstance(got, int | float):
        verdict.problems.append("no baseline and target in the expected outcome")
        return
    # (A goal that states no target but a deadline has a form and value of null: only its deadline is checked.)
    value = float(target["value"]) if target.get("value") is not None else float("nan")
    want = {
        "absolute": value,
        "relative": baseline * (1 + value),
        "points": baseline + value / 100,
        "multiple": baseline * value,
    }.get(target["form"])
    if want is not None and want == want and abs(got - want) > max(5e-4, 0.01 * abs(want)):
        verdict.problems.append(f"target {got:.4f}, asked {target['form']} {value} -> {want:.4f}")
    deadline = target.get("deadline")
    days = outcome.get("timeline_days")
    if deadline and isinstance(days, int | float):
        due = (CLOCKS.get(verdict.part, NOW) + timedelta(days=float(days))).date()
        if abs((due - date.fromisoformat(deadline)).days) > 1:
            verdict.problems.append(f"deadline {due}, asked {deadline}")


# -- the run -------------------------------------------------------------------------------------


async def truth_of(conn: psycopg.AsyncConnection[Any], sql: str | None) -> float | None:
    if not sql:
        return None
    row = await (await conn.execute(sql)).fetchone()
    value = row["value"] if row else None
    return None if value is None else float(value)


async def evaluate_part(
    http: httpx.AsyncClient, conn: psycopg.AsyncConnection[Any], part: str, cases: list[dict[str, Any]]
) -> list[Verdict]:
    threads: dict[str, str] = {}
    texts = {case["id"]: case["text"] for case in cases}
    verdicts: list[Verdict] = []
    for case in cases:
        expect = case["expect"]
        if case["channel"] == "goal":
            answer = await goal(http, case["text"])
            solution = answer.get("solution")
            verdict = Verdict(case, part, solution_kind(solution, answer.get("status")))
            check_goal(verdict, solution)
            verdict.detail = str((solution or {}).get("expected_outcome") or answer.get("status"))[:160]
        else:
            parent = case.get("after")
            if parent and parent not in threads and parent in texts:
                # A follow-up to a goal sent through the goal channel (batch 8): the goal is said in the chat
                # first, unscored, so the follow-up has its conversation.
                threads[parent], _, _ = await chat(http, texts[parent], None)
            thread_id, values, waiting = await chat(http, case["text"], threads.get(parent or ""))
            threads[case["id"]] = thread_id
            verdict = Verdict(case, part, chat_kind(values, waiting))
            reply = values.get("reply") or {}
            data = reply.get("data") or {}
            if expect.get("parts"):
                # A compound case is scored by its parts; its top-level figure only mirrors the first.
                verdict.parts = await score_parts(expect, data, lambda sql: truth_of(conn, sql))
                verdict.problems.extend(verdict.parts.problems)
            elif reply.get("kind") == "query":
                check_window(verdict, data.get("window"))
                # Batch 1 labels "which store ..." by the winner's id, later batches by its figure.
                asks_who = str(expect.get("value_sql") or "").startswith("SELECT store_id AS value")
                said = (data.get("leader") or {}).get("store") if asks_who else data.get("value")
                if expect.get("value_sql") or not expect.get("groups"):
                    # (A breakdown's figures are its groups': it has no one value.)
                    check_value(verdict, said, await truth_of(conn, expect.get("value_sql")))
                await check_groups(verdict, conn, data)
                for each in expect.get("each") or []:
                    # A comparison answers each store's own figure, not only their difference.
                    mine = (data.get("each") or {}).get(str(each["store_id"]))
                    if verdict.kind == "answer" and mine is None:
                        verdict.problems.append(f"no figure for store {each['store_id']}")
                    elif verdict.kind == "answer":
                        check_value(verdict, mine, await truth_of(conn, each["value_sql"]))
            elif verdict.kind == "success":
                check_goal(verdict, values.get("solution"))
            verdict.detail = str(reply.get("text") or "")[:160].replace("\n", " ")
        verdicts.append(verdict)
    return verdicts


def report(verdicts: list[Verdict], part: str, verbose: bool) -> dict[str, float]:
    claimed = [v for v in verdicts if v.kind in CLAIMS]
    windows = [v for v in verdicts if v.window_checked]
    by_kind: dict[str, list[Verdict]] = defaultdict(list)
    for verdict in verdicts:
        by_kind[verdict.expected].append(verdict)
    false_success = sum(v.false_success for v in verdicts)
    figures = {
        "cases": len(verdicts),
        "accuracy": sum(v.correct for v in verdicts) / len(verdicts),
        "false_success_rate": false_success / len(claimed) if claimed else 0.0,
        "correct_window_rate": sum(v.window_right for v in windows) / len(windows) if windows else 1.0,
    }
    print(f"\n== {part}: {len(verdicts)} cases")
    print(
        f"  false-success rate   {figures['false_success_rate']:6.1%}  ({false_success} of {len(claimed)} "
        "answers or successes are not backed; goal 0)"
    )
    print(
        f"  correct-window rate  {figures['correct_window_rate']:6.1%}  "
        f"({sum(v.window_right for v in windows)} of {len(windows)}; goal 100%)"
    )
    print(f"  overall accuracy     {figures['accuracy']:6.1%}")
    for kind in sorted(by_kind):
        group = by_kind[kind]
        answered = Counter(v.kind for v in group)
        print(
            f"  {kind:13s} {sum(v.correct for v in group):3d}/{len(group):<3d} answered as "
            + ", ".join(f"{k} {n}" for k, n in answered.most_common())
        )
    compound = [v.parts for v in verdicts if v.parts is not None]
    if compound:
        figures.update(report_parts(verdicts))
    if verbose:
        for verdict in verdicts:
            mark = "ok " if verdict.correct else ("FS " if verdict.false_success else "-- ")
            print(f"  {mark}{verdict.case['id']:28s} want {verdict.expected:12s} got {verdict.kind:12s} "
                  f"{'; '.join(verdict.problems)}")  # fmt: skip
            if not verdict.correct:
                print(f"       {verdict.detail}")
    return figures


def report_parts(verdicts: list[Verdict]) -> dict[str, float]:
    """Batch 13's figures over its compound cases (README-thirteenth-batch.md, "What a runner should check")."""
    scored = [v for v in verdicts if v.parts is not None]
    scores = [v.parts for v in scored if v.parts is not None]
    false_success = sum(v.false_success for v in scored)
    valued, answered = sum(s.valued for s in scores), sum(s.answered for s in scores)
    unanswerable, named = sum(s.unanswerable for s in scores), sum(s.named for s in scores)
    directions, right = sum(s.directions for s in scores), sum(s.direction_right for s in scores)
    figures = {
        "compound_false_success_rate": false_success / len(scored),
        "part_recall": answered / valued if valued else 1.0,
        "missing_named_rate": named / unanswerable if unanswerable else 1.0,
        "direction_accuracy": right / directions if directions else 1.0,
    }
    print(
        f"  compound cases {len(scored)}: false success {figures['compound_false_success_rate']:6.1%} "
        f"({false_success} of {len(scored)}; goal 0); part recall {answered}/{valued}; missing named "
        f"{named}/{unanswerable}; direction {right}/{directions}; right {sum(v.correct for v in scored)}"
    )
    return figures


async def main_async(url: str, key: str, database_uri: str, parts: list[str], verbose: bool) -> int:
    async with (
        httpx.AsyncClient(base_url=url, headers={"X-API-Key": key}, timeout=300) as http,
        await psycopg.AsyncConnection.connect(database_uri, row_factory=dict_row, autocommit=True) as conn,
    ):
        await conn.execute(f"SET search_path TO {DATA_SCHEMA}")
        for part in parts:
            verdicts = await evaluate_part(http, conn, part, load_cases(part))
            # The held-out part is reported, never listed case by case (nobody tunes on it).
            report(verdicts, part, verbose and part not in HELD_OUT)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS), help="tuning, heldout or both")
    parser.add_argument("--verbose", action="store_true", help="each tuning case and why it failed")
    args = parser.parse_args()
    parts = [part for part in args.parts.split(",") if part]
    with tempfile.TemporaryDirectory() as data_dir:
        # This process owns the embedded database (the service is given its URI) and stops it last, so
        # the case's SQL reads the same rows and nothing is left running.
        from pgserver import get_server  # type: ignore[attr-defined]

        database = get_server(Path(data_dir) / "pg", cleanup_mode="stop")
        try:
            uri = database.get_uri()
            code = 0
            clocks: dict[datetime, list[str]] = defaultdict(list)
            for part in parts:
                clocks[CLOCKS.get(part, NOW)].append(part)
            for clock, clocked in clocks.items():
                env = {"MASTER_AGENT_NOW": clock.isoformat(), "DATABASE_URL": uri}
                with serving(data_dir, extra_env=env, workers=1) as service:
                    code |= asyncio.run(main_async(service.url, service.key, uri, clocked, args.verbose))
        finally:
            database.cleanup()
        sys.exit(code)


if __name__ == "__main__":
    exit_on_signals()
    main()
