"""Labelled messages the offline intent classifier learns from. These are the domain-neutral ones;
each domain pack adds its own (``DomainPack.routing_examples``), and every agent's description and
skills count as EXECUTE exemplars of its domain."""

from __future__ import annotations

from master_agent.capabilities.spec import RoutingExample as Exemplar
from master_agent.capabilities.spec import routing_examples

GENERIC_EXEMPLARS: tuple[Exemplar, ...] = tuple(
    routing_examples(
        "CREATE",
        """
        Create an agent that tracks weekly refund rates per store
        Build me a new agent for invoice reminders
        I want an agent that summarises customer complaints every Monday
        Make a bot that watches inventory levels and alerts me
        Can you set up an agent to answer supplier questions
        New agent: it should draft weekly sales reports
        Help me create an assistant that monitors delivery delays
        Design an agent that reviews expense claims
        I need a custom agent for onboarding new staff
        Add an agent that checks competitor prices daily
        Make me an agent that compares figures every Friday
        Set up something that automatically reports returns each week
        """,
    )
    + routing_examples(
        "UPDATE",
        """
        Change my refund agent to also report returns
        Update the sales report agent to run daily instead of weekly
        Give the inventory agent access to the SQL tool
        Rename my complaints agent to feedback digest
        Make my summary agent also cover the new region
        Let my pricing agent include online prices too
        Edit the instructions of my pricing agent
        Modify the onboarding agent so it uses the playbook tools
        Add the knowledge search tool to my reporting agent
        Remove the SQL tool from the expenses agent
        Roll back my pricing agent to the previous version
        Make my refund agent stricter about its sources
        """,
    )
    + routing_examples(
        "QUERY",
        """
        List my agents
        What agents do I have
        Which agents can I use and what does each do
        Show me all my agents
        What can you do for me
        Which assistants are available on my account
        What are my agents capable of
        Tell me what agents are set up for this workspace
        What kinds of things can you help with
        Who can I ask to do what here
        """,
        "list_agents",
    )
    + routing_examples(
        "QUERY",
        """
        How did my last goal turn out
        Did the attach rate plan work
        What was the outcome of the solution you gave me last month
        Show the results of the playbook we deployed
        How is the coaching intervention doing so far
        Was the strategy successful
        What happened after we applied your recommendation
        Report the measured outcome of my previous goal
        How did the goal for the store turn out in the end
        What happened after the intervention we rolled out
        Did the changes you suggested pay off
        """,
        "outcome",
    )
    + routing_examples(
        "QUERY",
        """
        What does village knowledge say about staff coaching
        What have we learned about improving attach rate
        Any proven patterns for low conversion
        Search the knowledge base for training interventions
        What worked before for similar problems
        Which lessons do we have about staff turnover
        What patterns have other stores used successfully
        Look up past learnings on pricing promotions
        What do we know works for cutting returns
        Any best practices recorded on upselling
        Are there proven approaches to low sales per visit
        What have other teams learned about store promotions
        """,
        "knowledge",
    )
    + routing_examples(
        "QUERY",
        """
        How many transactions did we have last week
        What is the average sale amount this month
        What was total revenue last month
        How many orders were placed yesterday
        What is our current conversion rate
        Show me the number of customers in the last 30 days
        How many sales did we make this week
        What were the figures for the last quarter
        """,
        "data",
    )
    + routing_examples(
        "AMBIGUOUS",
        """
        Help
        Can you help me with something
        I have a problem
        Do the thing
        Fix it
        Hmm not sure
        Make it better
        What about that
        Something is wrong
        I need assistance
        Yes
        Ok
        """,
    )
    + routing_examples(
        "EXECUTE",
        """
        Plan a Black Friday marketing campaign
        Write a social media campaign for our spring launch
        Design an email newsletter for loyal customers
        Increase brand awareness among students
        """,
        domain="marketing",
    )
    + routing_examples(
        "EXECUTE",
        """
        Reduce employee turnover by 10% this year
        Hire three new sales associates by March
        Improve staff morale in the warehouse
        Design a performance review process for managers
        """,
        domain="hr",
    )
    + routing_examples(
        "EXECUTE",
        """
        Schedule a board meeting next month with the CFO
        Book a call with the supplier on Friday
        Organise my calendar for next week
        Send a reminder email to the team about the offsite
        """,
        domain="assistant",
    )
    + routing_examples(
        "EXECUTE",
        """
        Approve the loan application for the Smiths
        Find customers likely to take a personal loan
        Reduce our cash burn by 15% this quarter
        Prepare the quarterly tax filing
        """,
        domain="finance",
    )
    + routing_examples(
        "EXECUTE",
        """
        Cut delivery times to our northern stores by 2 days
        Optimise the warehouse picking route
        Reduce shipping costs by 8% within 90 days
        """,
        domain="logistics",
    )
)

__all__ = ["GENERIC_EXEMPLARS", "Exemplar"]
