"""How the console reaches a node: :class:`~mambaconsole.node.base.Node` and its
implementations, the tmux run store (:mod:`mambaconsole.node.runs`) and the agent stream.

:func:`connect` is the one entry point: ``connect("local")`` gives a
:class:`~mambaconsole.node.local.LocalNode`; any other ``HOST`` (ssh alias, ``host``,
``user@host:port``) an :class:`~mambaconsole.node.ssh.SSHNode`, already connected.
"""

from __future__ import annotations

from mambaconsole.node.base import CommandResult, CommandTimeout, Node, NodeError, command_line

__all__ = ["CommandResult", "CommandTimeout", "Node", "NodeError", "command_line", "connect", "node_for"]

LOCAL = "local"


def node_for(host: str, **kw) -> Node:
    """The Node for ``host`` without connecting yet (SSH connects on first use)."""
    if host == LOCAL:
        from mambaconsole.node.local import LocalNode

        return LocalNode()
    from mambaconsole.node.ssh import SSHNode

    return SSHNode(host, **kw)


async def connect(host: str, **kw) -> Node:
    """The Node for ``host``, connected. Raises NodeError (one line) when it cannot be reached.

    ``kw`` goes to :class:`~mambaconsole.node.ssh.SSHNode` (``connect_timeout`` in seconds)."""
    node = node_for(host, **kw)
    connect_now = getattr(node, "connect", None)
    if connect_now is not None:
        await connect_now()
    return node
