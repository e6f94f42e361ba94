"""The front door: the root of the ``master_agent`` graph for chat input, node by node.

    START -> route --agent--------> solve ---------> END   (the agent's loop, as a subgraph)
       |          --query--------> answer_query --> END   (a query handler)
       |          --builder------> build_agent ---> END
       |          --(a system request)> build_system -> END   (the meta-orchestrator)
       |          --out_of_scope-> out_of_scope --> END
       |          --drop_flow----> drop_flow -----> END   ("never mind the board meeting")
       |          --clarification> clarify (interrupt) -> route
       '--(a run with a goal and no new message: an explicit EXECUTE)--> solve

``route`` reads the message with the conversation before it, honours ``@agent``, analyses the intent,
discovers the tenant's agents and decides (``routing.decision``). Each decision is kept as ``routing``
and appended to ``routing_trace``, and streamed as a ``custom`` event.

A message that cuts an agent flow short (its run still working, or the flow waiting for the user's
answer) starts a new flow; the one cut short is kept in ``suspended`` (seed 002's interruption
handling), and a later "resume the board meeting" runs it again as a new flow of its agent with its
goal and values (and what the message adds), "never mind the board meeting" drops it.

Its modules:

    state.py       the nodes' names and the thread state (``FrontDoorState``)
    base.py        what the front door holds and what its nodes share (``FrontDoorBase``)
    route.py       the routing decision: ``route``, ``clarify`` and the edges out of them (``RouteNodes``)
    decide.py      the decision's steps, from a suspended flow resumed to an unserved figure (``DecisionSteps``)
    data_steps.py  its steps about data: data the tenant lacks refused, an unserved figure asked (``DataSteps``)
    follow_ups.py  a short message continuing the one before; a question naming a figure
    flows.py       the flow a message cuts short, suspended flows resumed or dropped, what the thread waits on
    handlers.py    the dispatch: the nodes a routed message ends in (``HandlerNodes``)
    replies.py     what the front door answers: result text, hand-offs, envelopes
    cards.py       the tenant's agents as cards and exemplars; how a message fills an agent's arguments
    systems.py     requests for an agent system, run on the meta graph
    front_door.py  ``FrontDoor`` (both sets of nodes in one graph) and ``make_front_door``
"""

from master_agent.routing.graph.cards import agent_cards, chat_arguments, exemplars_for, message_field
from master_agent.routing.graph.flows import flow_command
from master_agent.routing.graph.follow_ups import (
    asks_about_the_figure,
    inherits_target,
    is_figure_question,
    names_a_figure,
)
from master_agent.routing.graph.front_door import FrontDoor, discovery_for, make_front_door
from master_agent.routing.graph.state import NODES, FrontDoorState
from master_agent.routing.graph.systems import is_system_request, run_system_request, system_reply
from master_agent.routing.models import IntentAnalysis

__all__ = [
    "NODES",
    "FrontDoor",
    "FrontDoorState",
    "IntentAnalysis",
    "agent_cards",
    "asks_about_the_figure",
    "chat_arguments",
    "discovery_for",
    "exemplars_for",
    "flow_command",
    "inherits_target",
    "is_figure_question",
    "is_system_request",
    "make_front_door",
    "message_field",
    "names_a_figure",
    "run_system_request",
    "system_reply",
]
