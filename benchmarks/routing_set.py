"""The labelled routing set scored by ``make eval-routing``: messages a tenant of the retail pack sends,
each with the intent and the target the front door should reach. None of them is a classifier
exemplar. ``after``: the message sent just before on the same thread (follow-ups)."""

from __future__ import annotations

from typing import Any


def _rows(
    intent: str, kind: str, name: str | None, texts: str, after: str | None = None
) -> list[dict[str, Any]]:
    return [
        {"message": line.strip(), "intent": intent, "kind": kind, "name": name, "after": after}
        for line in texts.strip().splitlines()
    ]


ROUTING_SET: list[dict[str, Any]] = [
    *_rows(
        "EXECUTE",
        "agent",
        "master_agent",
        """
        Increase Store 2's accessory attach rate by 25% within 90 days
        Lift the attach rate at Store 9 by 12% in the next two months
        Store 4 needs a higher accessory attach rate, target plus 20% by summer
        Grow accessory attachment at Store 1 by 30 percent within 120 days
        We want Store 6 to attach more accessories to phone sales, up 15% in 60 days
        Raise accessories sold per handset at Store 3 by a fifth this quarter
        Improve Store 8's accessory attach rate by 10% within 45 days
        Make Store 5 sell more cases and chargers with every phone, +20% in 8 weeks
        Increase the accessory attach rate of Store 7 by 18% before the holidays
        Boost Store 10's accessory attach by 22% over the next 100 days
        Fix the low accessory attach rate at Store 2 within 60 days
        Store 3 attach rate is lagging, raise it by 15% in 90 days
        Get Store 4's staff to attach more accessories, 25% better in 3 months
        Double the accessory attach rate at Store 6 within a year
        Our phone customers at Store 9 rarely buy accessories, increase that by 20% in 60 days
        Improve accessory upselling at Store 1 by 12% within 75 days
        Push Store 8's attach rate up by 10 percent this quarter
        Increase accessory sales per device at Store 5 by 15% within 30 days
        Store 7 should attach accessories more often, aim for 20% more in 90 days
        Raise the attach rate for Store 10 by 30% by year end
        Help Store 3 raise accessory attach by 10% in 6 weeks
        Improve the accessory attach rate at Store 2 by 20 percent within 2 months
        Increase how often Store 4 sells an accessory with a device by 15% in 60 days
        Work out why Store 6 sells few accessories and raise its attach rate by 10% in 90 days
        Lift Store 1 accessory attach rate 25% in 120 days
        """,
    ),
    *_rows(
        "EXECUTE",
        "out_of_scope",
        None,
        """
        Reduce employee turnover at Store 4 by 10% this year
        Plan a Black Friday marketing campaign
        Schedule a board meeting next month with the CFO
        Launch a TikTok campaign for our new headphones
        Cut staff absenteeism at Store 2 by 20% in six months
        Negotiate better rent for our downtown location
        Book flights for the regional managers' summit
        Write a press release about our store opening
        Reduce energy costs across all stores by 15% this year
        Recruit five part-time cashiers for December
        Prepare payroll for the next pay period
        Design a new logo for the loyalty programme
        Increase our Instagram followers by 50% in three months
        Send a birthday card to every employee this month
        Organise a team-building day for the Store 3 staff
        Reduce shoplifting losses at Store 5 by 30% this year
        Set up a call with our bank about a credit line
        Create a quarterly budget forecast for the finance team
        Lower the delivery cost of online orders by 10% in 90 days
        Improve our Google review rating from 3.9 to 4.5 stars
        Plan the grand opening event for Store 11
        Draft an employment contract for a new store manager
        Translate our website into Spanish
        Renew the insurance policy for our warehouse
        Find a supplier of cheaper shopping bags
        """,
    ),
    *_rows(
        "QUERY",
        "query",
        "data",
        """
        What was Store 3's attach rate last month?
        What's the attach rate at Store 8?
        How many device sales did Store 4 have last week?
        What was the accessory revenue at Store 2 over the last 30 days?
        What is Store 6's average accessory amount this year?
        Tell me the attach rate for Store 1 in the previous quarter
        How many transactions did Store 9 record last month?
        What was our overall attach rate last month?
        Show the accessory revenue of Store 5 this month
        What is the attach rate of Store 10 over the last 90 days?
        How much accessory revenue did Store 7 make last year?
        What's the average accessory sale at Store 3 last month?
        Number of sales at Store 2 in the last 14 days?
        Give me the attach rate of Store 4 this quarter
        What was Store 8's accessory attach rate in the past 60 days?
        How many device sales did we make this week?
        What was the attach rate at Store 6 last week?
        Accessory revenue for Store 1 last quarter?
        """,
    ),
    *_rows(
        "QUERY",
        "query",
        "data",
        """
        What was the attach rate at Store 5 yesterday?
        How many device sales did Store 1 have today?
        What is the accessory revenue across all stores this quarter?
        """,
    ),
    *_rows(
        "QUERY",
        "query",
        "store_ranking",
        """
        Which of our stores attaches accessories most often?
        Rank the stores from best to worst attach rate
        Which store is weakest at accessory sales?
        """,
    ),
    *_rows(
        "EXECUTE",
        "out_of_scope",
        None,
        """
        Repaint the front of Store 6 before spring
        Reduce customer wait times at the repair desk by 25%
        Choose a new point-of-sale vendor for next year
        """,
    ),
    *_rows(
        "EXECUTE",
        "agent",
        "master_agent",
        """
        Store 9 sells too few screen protectors with phones; raise attach rate by 10% in 60 days
        Increase accessory attach at Store 4 by 8% within 30 days
        """,
    ),
    *_rows(
        "CREATE",
        "builder",
        None,
        """
        Please create an agent that tracks accessory returns per store
        I need a new agent to brief me on sales every morning
        """,
    ),
    *_rows(
        "QUERY",
        "query",
        "list_agents",
        """
        list my agents
        What agents are available to me?
        Which agents do I have and what are they for?
        Show my agents
        What can my agents do?
        Tell me about the agents on my account
        Which bots can I use here?
        Give me a list of my assistants
        What are you able to help me with?
        Which agents are set up for my company?
        """,
    ),
    *_rows(
        "QUERY",
        "query",
        "outcome",
        """
        How did the attach rate goal for Store 5 turn out?
        Did our last strategy work?
        What results did the coaching plan deliver?
        Was the plan you made last month a success?
        Show me the outcome of my previous goals
        Has the playbook improved anything yet?
        What happened with the intervention at Store 2?
        How are my solutions performing so far?
        Report on the measured results of the last solution
        Did the expected outcome materialise?
        """,
    ),
    *_rows(
        "QUERY",
        "query",
        "knowledge",
        """
        What does village knowledge say about peer coaching?
        What have other stores learned about accessory upselling?
        Are there proven patterns for low attach rates?
        What do we know works for raising attach rate?
        Search past learnings about staff training
        Which interventions have worked before for similar stores?
        What lessons were recorded about POS prompts?
        Any known best practices on accessory bundles?
        What has the village learned about tenure and sales?
        Look up patterns about new staff performance
        """,
    ),
    *_rows(
        "CREATE",
        "builder",
        None,
        """
        Create an agent that reports the weekly refund rate per store
        I'd like a new agent that emails me low stock alerts
        Build an agent to summarise store reviews every week
        Set up a custom agent for tracking staff training hours
        Make me an agent that compares store attach rates every Monday
        Can you create an assistant that watches refunds?
        New agent please: it should flag unusual sales drops
        I want to build an agent for supplier invoices
        Create a bot that drafts my weekly management report
        Design a new agent that checks price changes at competitors
        """,
    ),
    *_rows(
        "UPDATE",
        "builder",
        None,
        """
        Update my refund agent to include online orders
        Change the weekly report agent to run on Fridays
        Give my stock alert agent the knowledge search tool
        Rename the reviews agent to customer voice
        Roll back the refund agent to its last version
        Edit my supplier agent's instructions to be more formal
        Remove the SQL tool from my training agent
        Make my report agent also cover Store 11
        """,
    ),
    *_rows(
        "AMBIGUOUS",
        "clarification",
        None,
        """
        help
        hmm
        I'm not sure what I need
        can you do something about it
        things are bad
        what now
        do your thing
        ok go
        fix this please
        well?
        """,
    ),
    *_rows(
        "EXECUTE",
        "clarification",
        None,
        """
        Increase the accessory attach rate by 20% within 60 days
        Raise our attach rate by 10% this quarter
        Improve accessory upselling by 15% in 90 days
        Our attach rate is too low, fix it within two months
        """,
    ),
    *_rows(
        "EXECUTE",
        "agent",
        "master_agent",
        """
        @master_agent Increase Store 2's attach rate by 10% in 90 days
        @master_agent raise accessory attach at Store 5 by 20% within 60 days
        @master_agent Store 8 attach rate up 15% in 45 days
        """,
    ),
    *_rows(
        "EXECUTE",
        "clarification",
        None,
        """
        @refund_bot what was the refund rate last week
        @masteragent raise Store 2's attach rate by 5%
        @helper plan my week
        """,
    ),
    *_rows(
        "QUERY",
        "query",
        "data",
        """
        and for Store 7?
        what about Store 2
        and last week?
        same for Store 9
        """,
        after="What was Store 3's attach rate last month?",
    ),
    *_rows(
        "EXECUTE",
        "agent",
        "master_agent",
        """
        and for Store 7?
        what about Store 4
        """,
        after="Increase Store 5's accessory attach rate by 20% within 60 days",
    ),
]
