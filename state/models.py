"""Every record in the home, as a pydantic model with a ``schema`` version.

Extra fields are forbidden: a file that carries something we do not understand is
quarantined rather than half-read.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

SUMMARY_MAX = 1600

ACTIONS = ("read", "search", "edit", "test", "build", "format", "commit", "version", "delete")
PATH_ACTIONS = frozenset({"edit", "format", "delete", "commit", "version"})
STATUSES = ("working", "idle", "asked", "awaiting_approval", "done", "held", "bounced",
            "timeout", "error")
Status = Literal["working", "idle", "asked", "awaiting_approval", "done", "held", "bounced",
                 "timeout", "error"]
Agent = Literal["claude", "codex", "shell"]


def now() -> datetime:
    return datetime.now(timezone.utc)


class Strict(BaseModel):
    # defer_build: a crew-side command validates two or three kinds of record; building
    # every schema at import would cost it most of its start-up budget.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              defer_build=True)


class Record(Strict):
    schema_: Literal[1] = Field(default=1, alias="schema")


class AssignmentSpec(Strict):
    assignment_id: str
    message_id: str  # the assignment's own mail: the task
    task: str
    owns: list[str]  # absolute, normalised paths
    allow: list[str]
    project_dir: str
    handoff_of: str | None = None


class _Event(Record):
    seq: int = Field(ge=1)
    at: datetime
    actor: Literal["captain", "crew"]


class Recruited(_Event):
    type: Literal["recruited"] = "recruited"
    name: str
    incarnation_id: str
    agent: Agent
    assignment: AssignmentSpec


class Assigned(_Event):
    type: Literal["assigned"] = "assigned"
    assignment: AssignmentSpec


class Asked(_Event):
    type: Literal["asked"] = "asked"
    assignment_id: str
    question_id: str
    delivery_id: str
    text: str
    queued_at: datetime | None  # the newest mail the crew had when it asked


class Finished(_Event):
    type: Literal["done"] = "done"
    assignment_id: str
    delivery_id: str
    report: str
    queued_at: datetime | None


class BouncedMail(Strict):
    message_id: str
    delivery_id: str
    queued_at: datetime
    summary: str


class Dismissed(_Event):
    type: Literal["dismissed"] = "dismissed"
    assignment_id: str
    reason: str
    bounced: list[BouncedMail]


CrewEvent = Annotated[Union[Recruited, Assigned, Asked, Finished, Dismissed],
                      Field(discriminator="type")]


class EventFile:
    """Reads any crew event (a discriminated union on ``type``).

    Not a RootModel: a parametrised RootModel builds its validator at import, which every
    crew-side command would pay for; this builds it on first use.
    """

    _adapter = None

    @classmethod
    def model_validate_json(cls, text: str):
        if cls._adapter is None:
            from pydantic import TypeAdapter

            cls._adapter = TypeAdapter(CrewEvent)
        return cls._adapter.validate_json(text)


class Question(Strict):
    question_id: str
    text: str
    asked_at: datetime


class CrewSnapshot(Record):
    """A cache folded from ``crew/<key>/events``; rebuilt whenever it is behind."""

    seq: int
    name: str
    incarnation_id: str
    agent: Agent
    recruited_at: datetime
    assignment: AssignmentSpec
    assigned_at: datetime
    done_at: datetime | None = None
    report: str | None = None
    question: Question | None = None  # the last question asked on this assignment
    dismissed_at: datetime | None = None


class Message(Record):
    message_id: str
    crew: str
    incarnation_id: str
    assignment_id: str
    kind: Literal["assignment", "tell", "answer"]
    text: str
    question_id: str | None = None
    queued_at: datetime
    sender: Literal["captain"] = "captain"


class Receipt(Record):
    message_id: str
    crew: str
    assignment_id: str
    read_at: datetime
    via: Literal["inbox", "done", "hook"]


class Bounce(Record):
    message_id: str
    crew: str
    delivery_id: str
    reason: str
    bounced_at: datetime


class Notification(Record):
    delivery_id: str
    status: Status
    crew: str
    assignment_id: str
    summary: str = Field(max_length=SUMMARY_MAX)
    queued_at: datetime | None
    created_at: datetime
    question_id: str | None = None
    message_id: str | None = None


class Ack(Record):
    delivery_id: str
    crew: str
    acked_at: datetime


class Returned(Record):
    """Marks a notification as handed to a waiter: it is returned once."""

    delivery_id: str
    crew: str
    returned_at: datetime


class HomeMeta(Record):
    created_at: datetime
    kind: Literal["captain-home"] = "captain-home"
