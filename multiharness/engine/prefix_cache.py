"""Keys and values of prompt prefixes already computed, kept in token blocks under a memory budget.

A harness sends the same system prompt and tool schemas (5–6k tokens) at the start of every
session, and every call of a session re-sends the whole conversation so far. This cache is
vLLM's automatic prefix caching for one process: a request prefills only the tokens after the
longest prefix it shares with anything computed before, by this session or any other.

Rules:

- Token ids are cut into blocks of `block_tokens`; only full blocks are kept. A block is keyed
  by (the id of the block before it, its token ids), so it stands for its whole prefix: two
  prompts share exactly the blocks of their common prefix, and a lookup walks the chain from
  the first block. Keys compare token ids exactly (no hash that could collide).
- A block holds the keys and values of all layers for its tokens, as one tensor of shape
  `[layers, 2, kv_heads, block_tokens, head_dim]`, copied out of the computation that made it
  (never a view, so the budget counts real bytes).
- The budget is in bytes. Past it, least recently used blocks are evicted. A lookup or a store
  touches its chain from the last block to the first, so a block is always more recent than
  every block after it in its chain: eviction takes ends of chains first and never leaves a
  block that no lookup can reach.
- The entries belong to the weights that computed them. `clear()` drops them all; the engine
  calls it when the model's weights change (see `LocalEngine.reset_cache`).

Thread-safe: the engine's worker looks up and stores, a trainer may clear, a server reads stats.
"""

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["PrefixCache", "BLOCK_TOKENS"]

BLOCK_TOKENS = 32
"""Tokens per block: a prompt that diverges mid-block recomputes at most 31 tokens (about 0.1 s
of SmolLM2 prefill on 2 cores), while a 6k-token prompt is still only ~190 blocks to walk."""


@dataclass
class _Block:
    parent: int
    """Id of the block before this one in its chain (-1 for a first block)."""
    ids: tuple[int, ...]
    """The block's token ids."""
    kv: torch.Tensor
    """Keys and values, `[layers, 2, kv_heads, block_tokens, head_dim]`."""


class PrefixCache:
    """Blocks of keys and values found by token-id prefix, evicted least-recently-used past `budget_bytes`."""

    def __init__(self, budget_bytes: int, block_tokens: int = BLOCK_TOKENS):
        if budget_bytes < 0:
            raise ValueError(f"the prefix cache budget must be 0 (off) or more bytes, got {budget_bytes}")
        self.budget_bytes = int(budget_bytes)
        self.block_tokens = block_tokens
        self._blocks: OrderedDict[int, _Block] = OrderedDict()  # least recently used first
        self._index: dict[tuple[int, tuple[int, ...]], int] = {}  # (parent id, token ids) -> block id
        self._next_id = 0
        self._resident = 0
        self._lock = threading.Lock()
        self._counters = dict.fromkeys(
            ["queries", "hits", "query_tokens", "hit_tokens", "stored_blocks", "evicted_blocks", "clears"], 0
        )

    # --- public -------------------------------------------------------------------------

    def lookup(self, ids: Sequence[int], max_tokens: int) -> tuple[int, list[tuple[torch.Tensor, torch.Tensor]]]:
        """The longest cached prefix of `ids`, at most `max_tokens` long: `(length, [(keys, values) per layer])`.

        Keys and values have shape `[1, kv_heads, length, head_dim]` (a batch of one, as a model's
        cache wants them). A miss is `(0, [])`. Counts one query of `len(ids)` tokens.
        """
        with self._lock:
            chain = self._chain(ids)
            length = min(len(chain) * self.block_tokens, max_tokens)
            chain = chain[: -(-length // self.block_tokens)]  # the blocks that hold the first `length` tokens
            self._touch(chain)
            self._counters["queries"] += 1
            self._counters["query_tokens"] += len(ids)
            if not length:
                return 0, []
            self._counters["hits"] += 1
            self._counters["hit_tokens"] += length
            kv = torch.cat([self._blocks[b].kv for b in chain], dim=3)[:, :, :, :length]
        return length, [(layer[0][None], layer[1][None]) for layer in kv]

    def store(self, ids: Sequence[int], layers: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Keep the full blocks of `ids`, whose keys and values are `layers` (`[kv_heads, >= len(ids), head_dim]` each).

        Blocks already cached are only touched; new ones are copied out of `layers`. When the
        budget cannot hold them all, the first ones are kept (a prefix is useful, a tail is not).
        """
        if not self.budget_bytes:
            return
        size = self.block_tokens
        block_bytes = sum(k.shape[0] * size * k.shape[2] * 2 for k, _ in layers) * layers[0][0].element_size()
        with self._lock:
            chain = self._chain(ids)
            for start in range(len(chain) * size, len(ids) - size + 1, size):
                if (len(chain) + 1) * block_bytes > self.budget_bytes:
                    break  # even with everything else evicted, the budget ends here
                piece = slice(start, start + size)
                kv = torch.stack([torch.stack([k[:, piece], v[:, piece]]) for k, v in layers])
                parent, block_ids, block_id = (chain[-1] if chain else -1), tuple(ids[piece]), self._next_id
                self._next_id += 1
                self._blocks[block_id] = _Block(parent, block_ids, kv)
                self._index[(parent, block_ids)] = block_id
                self._resident += block_bytes
                self._counters["stored_blocks"] += 1
                chain.append(block_id)
            self._touch(chain)
            while self._resident > self.budget_bytes:
                self._evict_oldest()

    def clear(self) -> None:
        """Drop every entry (the weights that computed them changed)."""
        with self._lock:
            self._blocks.clear()
            self._index.clear()
            self._resident = 0
            self._counters["clears"] += 1

    def stats(self) -> dict:
        """Counters since start (queries and hits in requests and in tokens, as vLLM counts them) and memory in use."""
        with self._lock:
            return {
                **self._counters,
                "blocks": len(self._blocks),
                "block_tokens": self.block_tokens,
                "resident_bytes": self._resident,
                "budget_bytes": self.budget_bytes,
            }

    # --- blocks -------------------------------------------------------------------------

    def _chain(self, ids: Sequence[int]) -> list[int]:
        """Ids of the cached blocks that spell the start of `ids`, first block first."""
        chain, parent, size = [], -1, self.block_tokens
        for start in range(0, len(ids) - size + 1, size):
            block = self._index.get((parent, tuple(ids[start : start + size])))
            if block is None:
                break
            chain.append(block)
            parent = block
        return chain

    def _touch(self, chain: list[int]) -> None:
        for block in reversed(chain):  # the first block ends up most recent: ends of chains are evicted first
            self._blocks.move_to_end(block)

    def _evict_oldest(self) -> None:
        _, block = self._blocks.popitem(last=False)
        del self._index[(block.parent, block.ids)]
        self._resident -= block.kv.numel() * block.kv.element_size()
        self._counters["evicted_blocks"] += 1
