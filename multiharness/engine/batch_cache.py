"""The keys and values of the rows being decoded: one slot per row, each row at its own length.

Continuous batching needs rows that join and leave between two tokens, each with its own
prompt length. transformers' `DynamicCache` keeps one length for the whole batch (rows are
left-padded to it) and copies every layer's cache on every token (`torch.cat`); its paged
cache (continuous batching) switches the shared model to a paged attention implementation,
which a colocated trainer would then train with. So this cache is a `transformers.Cache` that
the model's own attention writes into:

- Each layer keeps a slab `[slots, kv_heads, capacity, head_dim]`; row `i` owns slot `i`, its
  tokens sit at columns `0 .. length_i - 1`, and a decode step writes each row's new key and
  value at column `length_i`: one slice copy per row (a few microseconds; one advanced-index
  write for all rows costs a tenth of a millisecond), never a copy of the past.
- The step's attention mask is 4-D, `[rows, 1, 1, width]`: row `i` sees columns `<= length_i`.
  transformers passes a 4-D mask to attention as it is, and the caller gives position ids.
- A row that leaves hands its slot to the last row (one row copied), so rows stay `0 .. n-1`.
- Slabs grow by whole steps (slots double, columns by `GROW_TOKENS`) and are freed when the
  batch is empty; growing copies the slab, which happens a few times per busy period.

Only full-attention decoder layers (Llama, Qwen2/3, SmolLM2) fit this layout; the engine refuses
models with sliding-window or linear-attention layers.
"""

import torch
from transformers.cache_utils import Cache, DynamicLayer

__all__ = ["BatchCache"]

GROW_TOKENS = 1024
"""Columns added when a row outgrows the slab: one copy of the slab per 1024 decoded tokens at most."""


class _SlotLayer(DynamicLayer):
    """One layer's slabs; `update` writes the step's key and value of row i at column `lengths[i]`."""

    def __init__(self, owner: "BatchCache"):
        super().__init__()
        self.owner = owner
        self.slab_keys: torch.Tensor | None = None
        self.slab_values: torch.Tensor | None = None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        rows, width = self.owner.rows, self.owner.width
        # A slice assignment is a copy_, which also casts: a trainer's mixed precision (accelerate wraps
        # the model's forward in autocast) can hand back states in another dtype than the slab's.
        for row, column in enumerate(self.owner.lengths):
            self.slab_keys[row, :, column] = key_states[row, :, 0]
            self.slab_values[row, :, column] = value_states[row, :, 0]
        self.keys = self.slab_keys[:rows, :, :width]
        self.values = self.slab_values[:rows, :, :width]
        return self.keys, self.values


class BatchCache(Cache):
    """Slots of keys and values for the running rows; the engine adds, steps and removes rows."""

    def __init__(self, num_layers: int, max_rows: int):
        super().__init__(layers=[_SlotLayer(self) for _ in range(num_layers)])
        self.max_rows = max_rows
        self.rows = 0
        self.lengths: list[int] = []
        """Tokens held per row; row i's next token goes to column lengths[i]."""
        self.width = 0

    # --- rows -----------------------------------------------------------------------------

    def add(self, layers: list[tuple[torch.Tensor, torch.Tensor]], copies: int = 1) -> None:
        """Append `copies` rows that start from the same past (`[1, kv_heads, length, head_dim]` per layer)."""
        length = layers[0][0].shape[2]
        self._reserve(self.rows + copies, length + 1, like=layers[0][0])
        for layer, (keys, values) in zip(self.layers, layers):
            layer.slab_keys[self.rows : self.rows + copies, :, :length] = keys
            layer.slab_values[self.rows : self.rows + copies, :, :length] = values
        self.lengths += [length] * copies
        self.rows += copies

    def remove(self, row: int) -> None:
        """Drop row `row`; the last row moves into its slot (the caller moves its own record the same way)."""
        last = self.rows - 1
        if row != last:
            length = self.lengths[last]
            for layer in self.layers:
                layer.slab_keys[row, :, :length] = layer.slab_keys[last, :, :length]
                layer.slab_values[row, :, :length] = layer.slab_values[last, :, :length]
            self.lengths[row] = length
        self.lengths.pop()
        self.rows = last
        if not self.rows:  # idle: give the memory back
            for layer in self.layers:
                layer.slab_keys = layer.slab_values = layer.keys = layer.values = None

    def row_past(self, row: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Row `row`'s keys and values so far, `[kv_heads, length, head_dim]` per layer (views)."""
        length = self.lengths[row]
        return [(layer.slab_keys[row, :, :length], layer.slab_values[row, :, :length]) for layer in self.layers]

    # --- one decode step ------------------------------------------------------------------

    def step_inputs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The step's 4-D attention mask and position ids; grows the slab if a row is at its end."""
        self.width = max(self.lengths) + 1
        self._reserve(self.rows, self.width)
        device = self.layers[0].slab_keys.device
        lengths = torch.tensor(self.lengths, device=device)
        mask = (torch.arange(self.width, device=device)[None, :] <= lengths[:, None])[:, None, None, :]
        return mask, lengths[:, None]

    def advance(self) -> None:
        """Every row took one more token."""
        self.lengths = [length + 1 for length in self.lengths]

    def nbytes(self) -> int:
        """Bytes held by the slabs (the working memory of the running rows)."""
        slabs = [layer.slab_keys for layer in self.layers if layer.slab_keys is not None]
        return sum(2 * slab.numel() * slab.element_size() for slab in slabs)

    def _reserve(self, slots: int, columns: int, like: torch.Tensor | None = None) -> None:
        first = self.layers[0].slab_keys
        if first is None:
            heads, dim = like.shape[1], like.shape[3]
            old_slots, old_columns = 0, 0
        else:
            _, heads, old_columns, dim = first.shape
            old_slots = first.shape[0]
            if slots <= old_slots and columns <= old_columns:
                return
        new_slots = old_slots if slots <= old_slots else min(max(slots, 2 * old_slots), self.max_rows)
        new_columns = old_columns if columns <= old_columns else max(columns, old_columns + GROW_TOKENS)
        reference = like if first is None else first
        for layer in self.layers:
            for name in ("slab_keys", "slab_values"):
                old = getattr(layer, name)
                new = reference.new_zeros((new_slots, heads, new_columns, dim))
                if old is not None:
                    new[: self.rows, :, :old_columns] = old[: self.rows]
                setattr(layer, name, new)
