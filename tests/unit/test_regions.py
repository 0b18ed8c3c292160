"""The served regions: one validated constructor, the default first, a clear refusal, and the
region scope AWS calls follow."""

from __future__ import annotations

import asyncio

import pytest

from shared.config import Settings
from shared.regions import check_served, region_scope, scoped_region, served_regions
from shared.validation import RuleViolation


def test_the_list_is_read_in_order_and_the_first_is_the_default() -> None:
    assert served_regions("us-east-1, us-west-2", "eu-west-1") == ("us-east-1", "us-west-2")
    assert served_regions(None, "eu-west-1") == ("eu-west-1",)
    assert served_regions("  ", "eu-west-1") == ("eu-west-1",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("us-east-1,US-WEST-2", "HYPERPILOT_AWS_REGIONS: 'US-WEST-2' is not an AWS Region code"),
        ("us-east-1,,us-west-2", "HYPERPILOT_AWS_REGIONS: '' is not an AWS Region code"),
        ("us-east-1,us-east-1", "HYPERPILOT_AWS_REGIONS: us-east-1 is listed twice"),
    ],
)
def test_a_bad_entry_is_named(text: str, message: str) -> None:
    with pytest.raises(RuleViolation) as bad:
        served_regions(text, "us-east-1")
    assert str(bad.value) == message
    assert bad.value.hint


def test_a_region_not_served_is_refused_naming_the_served() -> None:
    served = ("us-east-1", "us-west-2", "eu-west-1")
    assert check_served(None, served) == "us-east-1"
    assert check_served("eu-west-1", served) == "eu-west-1"
    with pytest.raises(RuleViolation) as refused:
        check_served("ap-south-1", served)
    assert str(refused.value) == (
        "region ap-south-1 is not served by this control plane"
        " (it serves us-east-1, us-west-2 and eu-west-1)"
    )
    assert refused.value.hint == (
        "use one of us-east-1, us-west-2 and eu-west-1, or add ap-south-1 to HYPERPILOT_AWS_REGIONS"
    )


def test_settings_keep_aws_region_working(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HYPERPILOT_AWS_REGIONS", raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    alone = Settings(_env_file=None)
    assert (alone.aws_region, alone.served_regions) == ("eu-west-1", ("eu-west-1",))

    monkeypatch.delenv("AWS_REGION")
    monkeypatch.setenv("HYPERPILOT_AWS_REGIONS", "us-west-2,us-east-1")
    listed = Settings(_env_file=None)
    assert (listed.aws_region, listed.served_regions) == ("us-west-2", ("us-west-2", "us-east-1"))

    monkeypatch.setenv("AWS_REGION", "us-east-1")  # listed: allowed, the list's first is default
    assert Settings(_env_file=None).aws_region == "us-west-2"
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    with pytest.raises(ValueError, match="AWS_REGION eu-west-1 is not one of"):
        Settings(_env_file=None)
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.setenv("HYPERPILOT_AWS_REGIONS", "us-east-1,nowhere")
    with pytest.raises(ValueError, match="'nowhere' is not an AWS Region code"):
        Settings(_env_file=None)


async def test_the_scope_follows_a_command_into_its_tasks_and_threads() -> None:
    async def in_task() -> str | None:
        await asyncio.sleep(0)
        return scoped_region()

    assert scoped_region() is None
    with region_scope("us-west-2"):
        assert scoped_region() == "us-west-2"
        assert await asyncio.create_task(in_task()) == "us-west-2"
        assert await asyncio.to_thread(scoped_region) == "us-west-2"
        with region_scope(None):  # nothing named: the outer scope holds
            assert scoped_region() == "us-west-2"
    assert scoped_region() is None
    with region_scope("not a region"):
        assert scoped_region() is None
