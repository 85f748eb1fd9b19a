"""A policy of your own, by import path: hybrid-agent eval --policy examples.custom_policy:WaitThenGiveUp ...

Any class with a ``name`` and ``generate(requests) -> [Generation]`` works; run from the repository root.
"""

from hybrid_agent.policies import Generation

WAIT = '<tool_call>{"name": "computer_use", "action": "wait", "time": 1}</tool_call>'
GIVE_UP = '<tool_call>{"name": "computer_use", "action": "terminate", "status": "failure"}</tool_call>'


class WaitThenGiveUp:
    name = "wait-then-give-up"

    def generate(self, requests):
        return [Generation("Action: wait.\n" + (WAIT if r.step == 0 else GIVE_UP)) for r in requests]
