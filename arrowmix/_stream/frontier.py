"""Where a restored pipeline stands: its sources, and the replay of its open windows.

A freshly restored pipeline is lazy: its buffered stages re-read their current window
only when the next item is requested. ``materialize`` does that replay without yielding
anything, so the sources then stand where they stood when the checkpoint was taken:
after every row the instance had read. Elastic resume reads that *frontier* from
``ArrowSource.frontier()`` / ``ChunkSource.frontier()``.
"""

from __future__ import annotations

from typing import Any

from arrowmix._stream.anchored import AnchoredStage
from arrowmix._stream.base import Stream
from arrowmix._stream.chunks import ChunkSource
from arrowmix._stream.mix import ZipIterator
from arrowmix._stream.prefetch import PrefetchIterator
from arrowmix._stream.sources import ArrowSource
from arrowmix._stream.window import WindowIterator

__all__ = ["materialize", "pipeline_nodes", "row_sources"]


def row_sources(root: Stream[Any]) -> list[ArrowSource | ChunkSource[Any]]:
    """The row and chunk sources of a pipeline in a fixed (depth-first) order."""
    out: list[ArrowSource | ChunkSource[Any]] = []
    todo: list[Stream[Any]] = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, (ZipIterator, WindowIterator)):
            raise ValueError(
                f"elastic resume cannot re-deal the rows of {type(node).__name__}: "
                "it pairs or repeats items."
            )
        kids = node.children()
        if isinstance(node, (ArrowSource, ChunkSource)):
            out.append(node)
        elif not kids:
            raise ValueError(
                f"elastic resume needs row or chunk sources (Dataset.to_stream, "
                f"from_chunks); {type(node).__name__} cannot be re-dealt."
            )
        todo.extend(reversed(kids))
    return out


def pipeline_nodes(root: Stream[Any]) -> list[Stream[Any]]:
    """Every node of a pipeline, depth-first, parents before children."""
    out, todo = [], [root]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(reversed(node.children()))
    return out


def materialize(root: Stream[Any]) -> None:
    """Replay every partially emitted window of a freshly restored pipeline."""
    for node in pipeline_nodes(root):
        if isinstance(node, AnchoredStage) and node._buf is None and node._skip > 0:
            node._fill()
        elif (
            isinstance(node, PrefetchIterator)
            and node._worker is None
            and node._skip > 0
            and not node._chunk
            and not node._ended
        ):
            items = node.source._pull(node._skip)
            node._chunk, node._pos, node._skip = items, len(items), 0
            node._after = node.source.get_state()
