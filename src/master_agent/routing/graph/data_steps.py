"""The decision's steps about data: a question of data the tenant lacks refused, and a message no agent
serves read as a question about the data (``DecisionSteps`` takes them; split out by concern)."""

from __future__ import annotations

import re
from datetime import timedelta

from master_agent.capabilities.terms import (
    asks_money,
    goal_target,
    metric_mention,
    moves_a_figure,
    names_the_data,
    time_mention,
    time_window,
)
from master_agent.evolution.reuse import unknown_by_meaning
from master_agent.routing.decision import Outcome
from master_agent.routing.graph.base import FrontDoorBase
from master_agent.routing.graph.follow_ups import asks_a_share, asks_a_value, names_a_figure
from master_agent.routing.intent import message_entities
from master_agent.routing.models import IntentAnalysis, RouteTarget
from master_agent.routing.per_unit import distinct_count, per_unit_rate

EXECUTE = {"action": "EXECUTE", "query_kind": None}
DATA_QUERY = {"action": "QUERY", "query_kind": "data"}


#: A question in its written form: its mark, or a first word that asks.
_QUESTION = re.compile(r"\?\s*$|^\s*(?:what|what's|whats|how|which|who|when|where|avg|average)\b", re.I)


class DataSteps(FrontDoorBase):
    """Steps of the decision that read what data a message asks for."""

    async def _refused_for_missing_data(
        self, intent: IntentAnalysis, goal: str, override: str | None
    ) -> IntentAnalysis:
        """A data question at no period that names no figure of the data and one it lacks ("how many
        Galaxy S24s are in stock at store 3": stock), or nothing of the data at all ("roughly how many
        calories are in a banana?"), is refused: nothing here answers it."""
        if (
            override
            or intent.action != "QUERY"
            or intent.query_kind != "data"
            or time_mention(goal) is not None
        ):
            return intent
        if not (self._names_nothing_of_the_data(goal) or await self._names_only_missing_data(goal)):
            return intent
        return intent.model_copy(update={**EXECUTE, "out_of_scope": True})

    def _names_nothing_of_the_data(self, goal: str) -> bool:
        """Whether ``goal`` names nothing the tenant's data is about: no member of it (a store, a staff
        member), no figure, no money, no share of a group, and no noun of its figures, tables or columns
        (``terms.names_the_data``). The head reads any "how many ...?" as a data question."""
        metrics = self.pack.data_metrics
        if not metrics or set(message_entities(goal)) - {"window"}:
            return False
        return not (
            names_a_figure(goal, metrics) is not None
            or asks_money(goal)
            or asks_a_share(goal)
            or names_the_data(goal, metrics)
        )

    async def _unserved_as_data(
        self, goal: str, outcome: Outcome, intent: IntentAnalysis, *, unclear: bool = False
    ) -> tuple[Outcome, IntentAnalysis]:
        """An out-of-scope ``outcome`` (no agent takes the goal on, nobody named one and the head did not
        refuse it) as a question about the data when the goal names a figure of the data, or asks a
        figure over a period gone by of data the tenant lacks; an ``unclear`` one (read unsure, asked
        about or handed to an agent) when it names no figure of the data and one it lacks; otherwise
        unchanged."""
        if unclear:
            if not await self._names_only_missing_data(goal):
                return outcome, intent
            outcome = Outcome(
                RouteTarget(kind="query", name="data"),
                "read unsure; it names only data the tenant lacks, which the data handler says",
                best_guess=True,
            )
            return outcome, intent.model_copy(update=DATA_QUERY)
        if (figure := names_a_figure(goal, self.pack.data_metrics)) is not None:
            # It names a figure the tenant's data has ("avg training hrs per person", "Store 4 txns w/c 14
            # Sept"): a question about that figure, not foreign work. A guess all the same (its answer is
            # never more than partial, see answer_query), unless the figure is said by its name over a
            # period gone by, with nothing moving it ("avg handset price up north in Q3"): that is a data
            # question in so many words.
            by_name = metric_mention(goal, self.pack.data_metrics).metric is not None and asks_a_value(
                goal, self.pack.data_metrics, self.evolution.clock.now()
            )
            reason = f"no agent takes it on; read as asking for the {figure} of the data"
            outcome = Outcome(RouteTarget(kind="query", name="data"), reason, best_guess=not by_name)
        elif await self._asks_missing_data(goal):
            # "what's the footfall conversion at store 5 for last Saturday?": a figure over a period gone
            # by, of data the tenant lacks: answered by the data handler, which names what is missing.
            outcome = Outcome(
                RouteTarget(kind="query", name="data"),
                "no agent takes it on; it asks a figure over a period gone by of data the tenant lacks",
                best_guess=True,
            )
        else:
            return outcome, intent
        return outcome, intent.model_copy(update=DATA_QUERY)

    def _asks_of_a_named_figure(self, message: str) -> bool:
        """Whether ``message`` is a question (its mark, or an interrogative first word) about a figure of
        the data named by its name ("avg training hrs per person at store 7?"): a question about the data
        whatever else the head makes of it, where "make a Chrome extension that shows store sales" asks
        for work that merely mentions one."""
        metrics = self.pack.data_metrics
        return _QUESTION.search(message) is not None and (
            metric_mention(message, metrics).metric is not None
            # "how many different staff made a sale": a figure named by the units it counts
            or distinct_count(message, metrics) is not None
            or per_unit_rate(message, metrics) is not None
        )

    async def _asks_missing_data(self, message: str) -> bool:
        """Whether ``message`` asks for a figure over a period gone by (no target, no deadline, no verb
        that moves it) that names data the tenant's pack has no figure for ("footfall conversion")."""
        now = self.evolution.clock.now()
        window = time_window(message, now, direction="past")
        if window is None or window.end > now + timedelta(days=1) or not self.pack.data_metrics:
            return False
        if moves_a_figure(message) or goal_target(message) is not None:
            return False
        return await self._names_missing_data(message)

    async def _names_missing_data(self, message: str) -> bool:
        """Whether ``message`` names data the tenant's pack has no figure for (by meaning)."""
        missing = await unknown_by_meaning(
            message,
            self.evolution.knowledge.embedder,
            self.pack.problems,
            self.pack.problem_metrics,
            self.pack.data_metrics,
        )
        return missing is not None

    async def _names_only_missing_data(self, message: str) -> bool:
        """Whether ``message`` names no figure of the tenant's data and names data it lacks ("stock")."""
        if names_a_figure(message, self.pack.data_metrics) is not None or not self.pack.data_metrics:
            return False
        return await self._names_missing_data(message)
