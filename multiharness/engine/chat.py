"""OpenAI chat messages in, token ids out, and sampled token ids back into an OpenAI message.

The prompt a model sees is the request's messages and tools rendered by the model's own chat
template with the generation prompt, exactly once, here; capture and training reuse those ids
and never render again. Before rendering, messages are brought to the shape the template
expects, as vLLM does: text parts joined into one string, `None` content as "", and tool-call
`arguments` (a JSON string on the wire) decoded to an object so the template writes it back
as the model produced it. A completion is parsed with TRL's `parse_response`, and its tool
calls become OpenAI `tool_calls` with `arguments` as a JSON string.
"""

import json
import uuid

__all__ = ["render_prompt", "completion_message"]


def _text(content) -> str:
    """A message's text: a string as is, a list of parts joined by newlines, nothing as ""."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") in (None, "text", "input_text", "output_text"):
                parts.append(str(part.get("text", "")))
            else:
                raise ValueError(f"unsupported message content part {part!r}: this engine takes text only")
        return "\n".join(parts)
    raise ValueError(f"message content must be a string or a list of text parts, got {type(content).__name__}")


def _tool_call(call: dict) -> dict:
    function = dict(call.get("function") or {})
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            function["arguments"] = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass  # malformed arguments stay a string: the template renders what the model wrote
    return {**call, "function": function}


def _normalise(message: dict) -> dict:
    if not isinstance(message, dict) or "role" not in message:
        raise ValueError(f"each message needs a role, got {message!r}")
    normalised = {**message, "content": _text(message.get("content"))}
    if message.get("tool_calls"):
        normalised["tool_calls"] = [_tool_call(c) for c in message["tool_calls"]]
    else:
        normalised.pop("tool_calls", None)
    return normalised


def render_prompt(tokenizer, messages: list[dict], tools: list[dict] | None = None) -> list[int]:
    """The prompt ids: `messages` and `tools` through the chat template, with the generation prompt."""
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    ids = tokenizer.apply_chat_template(
        [_normalise(m) for m in messages],
        tools=tools or None,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=False,
    )
    return list(ids)


def render_assistant(tokenizer, messages: list[dict], tools: list[dict] | None, reply: dict) -> str:
    """The text the chat template writes for assistant message `reply` after `messages`.

    This is what a model following the template samples, so token ids encoded from it chain into
    the next turn's prompt by exact prefix. Everything after the final end-of-turn token (the
    template's newline between turns) belongs to the next prompt and is cut off.
    """
    normalised = [_normalise(m) for m in messages]
    prompt = tokenizer.apply_chat_template(normalised, tools=tools or None, add_generation_prompt=True, tokenize=False)
    full = tokenizer.apply_chat_template(normalised + [_normalise(reply)], tools=tools or None, tokenize=False)
    if not full.startswith(prompt):
        raise ValueError("the chat template does not render an assistant turn as a continuation of its prompt")
    text = full[len(prompt) :]
    end = tokenizer.eos_token
    return text[: text.rindex(end) + len(end)] if end and end in text else text


def completion_message(
    tokenizer, prompt_ids: list[int], token_ids: list[int], tools: list[dict] | None, *, stop_text: str | None = None
) -> dict:
    """The OpenAI assistant message for sampled `token_ids`.

    Tool calls are parsed only when tools were offered. `stop_text` is the decoded text already
    cut at a stop string: it is returned as content, with no tool parsing (the stop string may
    have cut a tool call in half).
    """
    from trl.chat_template_utils import parse_response

    if stop_text is not None:
        return {"role": "assistant", "content": stop_text}
    if not tools:
        # No tools offered (or tool_choice "none"): the text is the answer, as with vLLM's tool parser off.
        return {"role": "assistant", "content": tokenizer.decode(list(token_ids), skip_special_tokens=True)}
    parsed = parse_response(tokenizer, list(token_ids), prefix=list(prompt_ids), tools=tools or None)
    content = parsed.get("content") or ""
    calls = []
    for call in parsed.get("tool_calls") or []:
        function = call.get("function", call)
        arguments = function.get("arguments", {})
        calls.append(
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {
                    "name": function.get("name", ""),
                    "arguments": arguments
                    if isinstance(arguments, str)
                    else json.dumps(arguments, ensure_ascii=False),
                },
            }
        )
    if calls:
        return {"role": "assistant", "content": content or None, "tool_calls": calls}
    return {"role": "assistant", "content": content}
