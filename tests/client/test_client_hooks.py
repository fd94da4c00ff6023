"""The hooks against canary's OpenRouter simulator: the OpenAI SDK wrapper and the LiteLLM
callback put the list into every call, merged with the call's own ``provider`` object.

The list (from the loopback ignore-list server) names two of the simulator's three hosts, so
every answer comes from the third. The SDKs are imported in the tests that use them: importing
openai costs every test process half a second, collecting alone."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest

from canary.sim.server import RunningSimulator
from canary_client import AsyncIgnoreListClient, IgnoreListClient
from canary_client.openai_hook import with_ignore_list

MODEL = "acme/roleplay-1"
HELLO = [{"role": "user", "content": "Hello"}]


def served(sim: RunningSimulator) -> list[str]:
    """The host that served each request the simulator took, in order."""
    return [r["provider"] for r in sim.state.requests()]


@pytest.fixture
def ignore(server: Any, clock: Any) -> Iterator[IgnoreListClient]:
    server.behaviour.ignore = ["alpha", "bravo"]
    with IgnoreListClient(server.base_url, MODEL, clock=clock, wall_clock=clock.wall) as client:
        yield client


def test_the_openai_wrapper_adds_the_list_to_every_call(
    sim: RunningSimulator, ignore: IgnoreListClient
) -> None:
    from openai import OpenAI

    plain = OpenAI(base_url=sim.base_url, api_key="sk-test", max_retries=0)
    with with_ignore_list(plain, ignore) as client:  # closes the client it wraps
        for _ in range(4):
            reply = client.chat.completions.create(model=MODEL, messages=HELLO)
            assert reply.choices[0].message.content
        stream = client.chat.completions.create(model=MODEL, messages=HELLO, stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert plain.is_closed()
    assert served(sim) == ["charlie"] * 5


def test_the_openai_wrapper_merges_into_the_calls_own_provider_object(
    sim: RunningSimulator, server: Any, ignore: IgnoreListClient
) -> None:
    import openai

    server.behaviour.ignore = ["alpha"]
    with openai.OpenAI(base_url=sim.base_url, api_key="sk-test", max_retries=0) as plain:
        client = with_ignore_list(plain, ignore)
        client.chat.completions.create(
            model=MODEL, messages=HELLO, extra_body={"provider": {"ignore": ["bravo"]}},
        )  # fmt: skip
        with pytest.raises(openai.NotFoundError, match="No allowed providers"):
            client.chat.completions.create(
                model=MODEL, messages=HELLO, extra_body={"provider": {"ignore": ["bravo", "charlie"]}},
            )  # fmt: skip
        other = plain.chat.completions.create(model=MODEL, messages=HELLO)
        assert other.choices[0].message.content  # the client it was made from is unchanged
    assert served(sim)[0] == "charlie"


def test_with_no_list_held_the_call_goes_out_without_ignore(
    sim: RunningSimulator, server: Any, clock: Any
) -> None:
    from openai import OpenAI

    server.stop()
    with (
        IgnoreListClient(server.base_url, MODEL, clock=clock, wall_clock=clock.wall) as ignore,
        OpenAI(base_url=sim.base_url, api_key="sk-test", max_retries=0) as plain,
    ):
        reply = with_ignore_list(plain, ignore).chat.completions.create(model=MODEL, messages=HELLO)
    assert reply.choices[0].message.content
    assert ignore.last_error is not None


def test_the_async_openai_wrapper_adds_the_list(
    sim: RunningSimulator, server: Any, clock: Any
) -> None:
    from openai import AsyncOpenAI

    server.behaviour.ignore = ["bravo", "charlie"]

    async def main() -> None:
        async with AsyncIgnoreListClient(
            server.base_url, MODEL, background=True, clock=clock, wall_clock=clock.wall
        ) as ignore:
            plain = AsyncOpenAI(base_url=sim.base_url, api_key="sk-test", max_retries=0)
            async with with_ignore_list(plain, ignore) as client:
                await asyncio.gather(
                    *(client.chat.completions.create(model=MODEL, messages=HELLO) for _ in range(3))
                )
            assert plain.is_closed()

    asyncio.run(main())
    assert served(sim) == ["alpha"] * 3


def test_a_wrapper_refuses_helpers_of_the_other_kind(ignore: IgnoreListClient) -> None:
    from openai import AsyncOpenAI

    plain = AsyncOpenAI(base_url="http://127.0.0.1:9", api_key="sk-test")
    with pytest.raises(TypeError, match="AsyncOpenAI takes AsyncIgnoreListClient helpers"):
        with_ignore_list(plain, ignore)


@pytest.mark.slow  # importing litellm takes seconds (several times that on a loaded machine)
@pytest.mark.timeout(120)
def test_the_litellm_callback_merges_the_list_into_the_calls_provider_preferences(
    sim: RunningSimulator, server: Any, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of its price list
    import litellm

    from canary_client.litellm_hook import IgnoreListCallback

    server.behaviour.ignore = ["alpha"]

    async def main() -> list[str]:
        async with AsyncIgnoreListClient(
            server.base_url, MODEL, background=True, clock=clock, wall_clock=clock.wall
        ) as ignore:
            monkeypatch.setattr(litellm, "callbacks", [IgnoreListCallback(ignore)])
            answers = []
            for own in ({"ignore": ["bravo"]}, {"ignore": ["bravo"], "sort": "price"}):
                reply = await litellm.acompletion(
                    model=f"openrouter/{MODEL}", api_base=sim.base_url, api_key="sk-test",
                    messages=HELLO, provider=own,
                )  # fmt: skip
                answers.append(reply.choices[0].message.content)
            reply = await litellm.acompletion(
                model=f"openrouter/{MODEL}", api_base=sim.base_url, api_key="sk-test",
                messages=HELLO, extra_body={"provider": {"ignore": ["bravo"]}},
            )  # fmt: skip
            answers.append(reply.choices[0].message.content)
            return answers

    assert all(asyncio.run(main()))
    assert served(sim) == ["charlie"] * 3
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
