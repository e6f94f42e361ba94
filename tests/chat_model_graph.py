"""A graph whose sub-graph asks a chat model (langchain's own scripted fake, streaming word by word):
messages, sub-graph namespaces and values to stream."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


async def _answer(state: Chat) -> dict[str, Any]:
    model = GenericFakeChatModel(messages=iter([AIMessage("hello there friend")]))
    return {"messages": [await model.ainvoke(state["messages"])]}


def make_graph(config: RunnableConfig) -> StateGraph[Any, Any, Any, Any]:
    writer: StateGraph[Any, Any, Any, Any] = StateGraph(Chat)
    writer.add_node("answer", _answer)
    writer.add_edge(START, "answer")
    writer.add_edge("answer", END)
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(Chat)
    graph.add_node("writer", writer.compile())
    graph.add_edge(START, "writer")
    graph.add_edge("writer", END)
    return graph
