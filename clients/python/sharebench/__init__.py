"""Client of sharebench's external-policy protocol (docs/external-policy.md).

A policy subclasses Policy and implements schedule(state) -> Plan; serve(policy) runs it as
`sharebench simulate --policy "external:python3 my_policy.py"`. Env runs sharebench from
Python instead, one episode per reset(), for schedulers that learn.

Standard library only; Python 3.9 or newer.
"""

from .protocol import PROTOCOL, Policy, ProtocolError, serve
from .state import Cluster, Hello, Job, Option, Plan, Session, State
from .env import Env
from .goarith import go_round, seconds

__all__ = [
    "PROTOCOL", "Policy", "ProtocolError", "serve", "Cluster", "Hello", "Job", "Option",
    "Plan", "Session", "State", "Env", "go_round", "seconds",
]
