"""Step-prefix samples from recorded runs: one per decision of each successful episode.

A run directory of ``hybrid-agent eval`` holds, per step, the frame the model saw, the
tool result relayed to it, its reply, the call the env executed and the evidence
(:mod:`hybrid_agent.recorder`); an OSWorld result tree written by ``hybrid-agent
export-osworld`` holds the same (:func:`hybrid_agent.report.osworld.read_exported`) and gives
the same samples. For step ``t`` of a successful episode the sample is
the context of step ``t`` (the steps before it, the current frame, the instruction,
the tools shown) rendered by the agent loop's own context builder and adapter under
the SFT context rule (:data:`grpo_trainer.sft.settings.SFT_CONTEXT`), encoded by the
policy's own :meth:`~grpo_trainer.model.hf_policy.HFTrainablePolicy.encode` (the prompt RL
stores), and as target the assistant turn of step ``t`` as the adapter renders a past
step, followed by the chat template's end of turn. The loss covers the target alone:
the prompt is context (:meth:`SFTSample.labels`).

Calls are taken as the env executed them (screen pixels) and written in the training
adapter's coordinate space (the scripted policy records screen pixels; Qwen3-VL
answers on a 0-1000 grid). A reply that executed nothing (malformed, cut off) is no
step, as in the agent loop, and gives no sample.

Stored tokens are the truth: building counts every sample's tokens (and drops the
ones over ``[sft] max_tokens``); training re-renders a sample's prompt from the record
(the pixels are not kept in memory) and refuses one whose ids differ from the stored ones.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hybrid_agent.adapters.base import ModelAdapter
from hybrid_agent.agent_loop import AgentConfig, AgentLoop
from hybrid_agent.context import ContextConfig, build_context, call_summary
from hybrid_agent.coords import POINT_ARGUMENTS, to_model
from hybrid_agent.errors import ConfigError
from hybrid_agent.messages import Message
from hybrid_agent.parse import extract_action_line, split_think
from hybrid_agent.recorder import EPISODES, EpisodeRecord, iter_episodes, read_episode, read_run_config
from hybrid_agent.report.osworld import TRAJECTORY, read_exported
from hybrid_agent.suite import load_suite
from hybrid_agent.toolset import ToolSpec, served_tools
from hybrid_agent.trajectory import Call, Evidence, Executed, Frame, Observation, Step
from osworld_mcp_env.tasks import load_task
from PIL import Image

from grpo_trainer.errors import GRPOError
from grpo_trainer.sft.settings import SFTSettings

IGNORE_INDEX = -100
"""The label of a token the loss skips (the prompt's), as ``transformers``' losses read it."""

# Decoded frames kept across samples: an episode's samples share their frames (64 x 1080p RGB ~ 400 MB).
FRAME_CACHE = 64


class DatasetError(GRPOError):
    """A run directory cannot become samples as asked (missing frames, another model family ...)."""


class PromptEncoder(Protocol):
    """What the builder needs of a policy: its prompt encoding, its processor and its end-of-turn ids."""

    processor: Any
    end_ids: set[int]

    def encode(self, messages: Sequence[Message]) -> list[int]:
        """The prompt ids of a context (with the generation prompt)."""
        ...


@dataclass(frozen=True)
class SFTSample:
    """One decision of a recorded episode: its prompt and target as token ids.

    Attributes:
        task_id: The episode's task.
        run: The episode's run index.
        step: The index of the decision among the episode's executed steps.
        record: The episode record it was rendered from.
        prompt_ids: The prompt ids as the policy encoded them (plain ints; the pixels are re-rendered).
        response_ids: The target: the assistant turn and the end-of-turn token.
        visual_tokens: Visual tokens of each image in the prompt, oldest first (the last: the current frame).
    """

    task_id: str
    run: int
    step: int
    record: Path
    prompt_ids: list[int]
    response_ids: list[int]
    visual_tokens: tuple[int, ...]

    @property
    def tokens(self) -> int:
        """Prompt and target tokens."""
        return len(self.prompt_ids) + len(self.response_ids)

    def labels(self) -> list[int]:
        """Per token of prompt + target: the token where the loss counts it, else :data:`IGNORE_INDEX`."""
        return [IGNORE_INDEX] * len(self.prompt_ids) + list(self.response_ids)


@dataclass
class DatasetSummary:
    """What a build read and kept.

    Attributes:
        episodes: Finished episodes read.
        trajectories: Successful episodes (score >= ``min_score``, no error): the data.
        samples: Samples kept.
        dropped: Samples over ``max_tokens``, left out.
        unexecuted: Replies of successful episodes that executed nothing (no step, no sample).
        tokens: Prompt + target tokens of every kept sample.
        current_tokens: Visual tokens of each kept sample's current frame.
        previous_tokens: Visual tokens of each kept sample's earlier frames shown with pixels.
    """

    episodes: int = 0
    trajectories: int = 0
    samples: int = 0
    dropped: int = 0
    unexecuted: int = 0
    tokens: list[int] = field(default_factory=list)
    current_tokens: list[int] = field(default_factory=list)
    previous_tokens: list[int] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The summary as ``--dry-run`` prints it."""

        def span(values: list[int]) -> str:
            return f"{min(values)}-{max(values)}" if values else "-"

        mean = sum(self.tokens) / len(self.tokens) if self.tokens else 0.0
        return [
            f"samples: {self.samples} from {self.trajectories} successful trajectories "
            f"({self.episodes} episodes read)",
            f"dropped over the token limit: {self.dropped}; replies that executed nothing: {self.unexecuted}",
            f"tokens per sample: mean {mean:.0f}, max {max(self.tokens, default=0)}",
            f"visual tokens per frame: current {span(self.current_tokens)}, "
            f"previous {span(self.previous_tokens)}",
        ]


@functools.lru_cache(maxsize=FRAME_CACHE)
def _frame(path: str) -> Frame:
    with Image.open(path) as image:
        return Frame(image.convert("RGB"))


@functools.cache
def served_catalog() -> dict[str, ToolSpec]:
    """The env's MCP tools by qualified name (a record keeps the names of the tools shown, not the specs)."""
    return {tool.qualified_name: tool for tool in served_tools()}


def _tools(names: Iterable[str], catalog: Mapping[str, ToolSpec]) -> tuple[ToolSpec, ...]:
    missing = [name for name in names if name not in catalog]
    if missing:
        raise DatasetError(f"Recorded tools {missing} are not in the tool catalog; cannot render them.")
    return tuple(catalog[name] for name in names)


def _rerenders_calls(adapter: ModelAdapter) -> bool:
    """The family writes a past step from its executed call (not the raw reply), so converted calls show."""
    return type(adapter).assistant_turn is not ModelAdapter.assistant_turn


@dataclass(frozen=True)
class RecordedEpisode:
    """A successful episode rebuilt as the agent loop holds one, in the training adapter's coordinates.

    Attributes:
        record: The record read.
        instruction: The task instruction.
        steps: The executed steps, oldest first.
        tools: The MCP tools shown at each executed step.
        frame_ids: The frame id each step's turn showed (``None``: none cited, or an older record).
        zoom_scales: Each step's zoom factor when its screenshot was a zoom, else ``None``.
    """

    record: EpisodeRecord
    instruction: str
    steps: tuple[Step, ...]
    tools: tuple[tuple[ToolSpec, ...], ...]
    frame_ids: tuple[int | None, ...]
    zoom_scales: tuple[int | None, ...]

    def context(self, t: int, context: ContextConfig, cite_frames: bool = True) -> list[Message]:
        """The messages of decision ``t``: the context the agent loop builds before step ``t``.

        ``cite_frames``: show the frame id the turn showed, as the agent loop does under
        ``[agent] cite_frames`` (a policy trained without the line would meet it at inference).
        """
        step = self.steps[t]
        frame_id = self.frame_ids[t] if cite_frames else None
        current = Observation(
            step.frame, step.tool_result, step.tool_result_parts, frame_id, self.zoom_scales[t]
        )
        return build_context(self.steps[:t], current, self.instruction, self.tools[t], context).messages


def _instruction(record: EpisodeRecord, run_dir: Path) -> str:
    """The recorded instruction (the end line's), or the task's own for a record from before it was kept."""
    if record.end.get("instruction"):
        return str(record.end["instruction"])
    suite = read_run_config(run_dir).get("suite")
    sources = {task.task_id: task.source for task in load_suite(suite)} if suite else {}
    if record.task_id not in sources:
        raise DatasetError(
            f"{record.path} records no instruction and its task {record.task_id!r} is not in the run's "
            f"suite {suite!r}; record it again."
        )
    return load_task(sources[record.task_id]).instruction


def _written(entry: Mapping[str, Any]) -> Call:
    """The call of a record entry (a step's ``parse`` or one of its ``then``) as the model wrote it."""
    return Call(entry["call"]["name"], dict(entry["call"]["arguments"]))


def _converted(
    step: Mapping[str, Any], recorded: Call, screen: tuple[int, int], adapter: ModelAdapter
) -> Call:
    """The executed call (screen pixels) in the adapter's space; a non-GUI call as it was written."""
    if not recorded.is_gui:
        return recorded
    arguments = dict(step["action"]["arguments"])
    for key in POINT_ARGUMENTS:
        if key in arguments:
            arguments[key] = list(to_model(tuple(arguments[key]), screen, adapter.coordinates))
    return Call(recorded.name, arguments)


def _response(text: str, recorded: Call, call: Call) -> str:
    """The reply with the call in the training space; a synthesised ``Action:`` line follows the call."""
    if call == recorded:
        return text
    think, rest = split_think(text)
    line = extract_action_line(rest)
    if line is None or line == call_summary(recorded):
        line = call_summary(call)
    head = f"<think>\n{think}\n</think>\n\n" if think else ""
    return f"{head}Action: {line}\n<tool_call>\n{call.to_json()}\n</tool_call>"


def rebuild_episode(
    record: EpisodeRecord,
    run_dir: Path,
    adapter: ModelAdapter,
    catalog: Mapping[str, ToolSpec],
    frames: Path | None = None,
) -> tuple[RecordedEpisode, int]:
    """The executed steps of ``record`` for ``adapter``, and how many replies executed nothing.

    ``catalog`` gives the specs of the tools each step names as shown (:func:`served_catalog`
    for the desktop env); ``frames`` is the folder the steps' screenshot paths are relative to
    (default: the run directory's ``episodes/``).

    Raises:
        DatasetError: A frame is missing, the record's family differs from the adapter's, or its
            coordinates differ and the family writes past steps from the raw reply.
    """
    family = (record.header.get("config") or {}).get("agent", {}).get("adapter")
    if family is not None and family != adapter.name:
        raise DatasetError(
            f"{record.path} was recorded with the {family!r} adapter, training uses {adapter.name!r}: "
            "its replies are another family's format."
        )
    same_space = record.header.get("coordinates") == str(adapter.coordinates.policy)
    if not same_space and not _rerenders_calls(adapter):
        raise DatasetError(
            f"{record.path} holds coordinates in {record.header.get('coordinates')!r}; the {adapter.name!r} "
            f"family ({adapter.coordinates.policy}) shows past replies as written: they cannot be converted."
        )
    frames = frames if frames is not None else run_dir / EPISODES
    steps, tools, frame_ids, zoom_scales, unexecuted = [], [], [], [], 0
    for line in record.steps:
        parse = line.get("parse") or {}
        if not parse.get("ok") or line.get("action") is None:
            unexecuted += 1
            continue
        if not line.get("screenshot"):
            raise DatasetError(
                f"{record.path} step {line['step']} has no screenshot (run without --no-screenshots)."
            )
        frame = _frame(str(frames / line["screenshot"]))
        recorded = _written(parse)
        call = _converted(line, recorded, frame.size, adapter) if not same_space else recorded
        evidence = Evidence(**line["evidence"]) if line.get("evidence") else None
        response = _response(line.get("model_output", ""), recorded, call)
        more = tuple(
            Executed(
                _converted(follow, _written(follow), frame.size, adapter)
                if not same_space
                else _written(follow),
                Evidence(**follow["evidence"]) if follow.get("evidence") else None,
            )
            for follow in line.get("then") or ()
            if follow.get("executed")
        )
        parts = tuple(line.get("tool_result_parts") or ())
        steps.append(Step(frame, line.get("tool_result_shown", ""), response, call, evidence, more, parts))
        tools.append(_tools(line.get("shown_tools") or [], catalog))
        frame_ids.append(line.get("frame_id"))
        zoom_scales.append(line.get("zoom_scale"))
    episode = RecordedEpisode(
        record,
        _instruction(record, run_dir),
        tuple(steps),
        tuple(tools),
        tuple(frame_ids),
        tuple(zoom_scales),
    )
    return episode, unexecuted


def target_ids(encoder: PromptEncoder, messages: Sequence[Message], target: str) -> list[int]:
    """The ids of ``target`` as the model writes it after the prompt, through its end-of-turn token.

    With a template that renders a conversation as its prompt plus the reply (Qwen's do), the
    target is what follows the prompt's text (the generation prompt included) when it renders
    ``target`` as the next assistant turn, cut after the first end-of-turn token: whatever the
    template adds to an assistant turn is learnt too. Otherwise it is the target's text and the
    tokenizer's end-of-turn token, what sampling stops on.

    Raises:
        DatasetError: No end-of-turn token of the policy closes the turn.
    """
    processor = encoder.processor
    tokenizer = processor.tokenizer
    prompt = processor.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    full = processor.apply_chat_template(
        [*messages, {"role": "assistant", "content": target}], tokenize=False
    )
    if full.startswith(prompt):
        ids = list(tokenizer(full[len(prompt) :], add_special_tokens=False)["input_ids"])
    else:
        ids = [*tokenizer(target, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]
    for i, token in enumerate(ids):
        if token in encoder.end_ids:
            return ids[: i + 1]
    raise DatasetError("An assistant turn ends with none of the policy's end-of-turn tokens.")


def image_token_runs(ids: Sequence[int], image_token: int) -> tuple[int, ...]:
    """Lengths of the runs of ``image_token`` in ``ids``: each image's visual tokens, in order."""
    runs: list[int] = []
    previous = None
    for token in ids:
        if token == image_token:
            if previous == image_token:
                runs[-1] += 1
            else:
                runs.append(1)
        previous = token
    return tuple(runs)


def _episodes_of(source: Path) -> Iterator[tuple[EpisodeRecord, Path]]:
    """The finished records of a run directory or an exported OSWorld tree, each with its frames' folder.

    Raises:
        DatasetError: ``source`` is neither.
    """
    if (source / EPISODES).is_dir():
        for record in iter_episodes(source):
            yield record, source / EPISODES
    elif source.is_dir() and next(source.rglob(TRAJECTORY), None) is not None:
        try:
            for exported in read_exported(source):
                yield exported.record, exported.frames
        except ConfigError as error:
            raise DatasetError(str(error)) from error
    else:
        raise DatasetError(
            f"{source} is neither a run directory of hybrid-agent eval (no {EPISODES}/) nor an OSWorld "
            f"result tree of hybrid-agent export-osworld (no {TRAJECTORY})."
        )


class SFTDataset:
    """The samples of some run directories for one policy, agent config and ``[sft]`` settings."""

    def __init__(
        self,
        encoder: PromptEncoder,
        agent: AgentConfig,
        settings: SFTSettings,
        image_token: int,
        catalog: Mapping[str, ToolSpec] | None = None,
    ) -> None:
        """Fixes how samples are rendered: ``agent`` under ``settings.context``, encoded by ``encoder``.

        Args:
            encoder: The policy (its ``encode``, processor and end-of-turn ids).
            agent: The ``[agent]`` section (the adapter, tool-result length, reasoning shown).
            settings: The ``[sft]`` section (context rule, token limit, success threshold).
            image_token: The model's image placeholder id (visual tokens are counted from the ids).
            catalog: The specs of the tools the records name; ``None``: the desktop env's
                (:func:`served_catalog`).
        """
        self.catalog = catalog if catalog is not None else served_catalog()
        self.encoder = encoder
        self.settings = settings
        loop = AgentLoop(dataclasses.replace(agent, context=settings.context))
        self.adapter = loop.adapter
        self.context = loop.context
        self.image_token = image_token
        self.cite_frames = agent.cite_frames
        self.samples: list[SFTSample] = []
        self.summary = DatasetSummary()
        self._episodes: dict[Path, tuple[Path, Path]] = {}  # record -> its run directory, its frames
        # Samples of one episode are rendered together in order, so a few rebuilt episodes suffice.
        self._episode = functools.lru_cache(maxsize=4)(self._rebuild)

    def add_runs(self, run_dirs: Iterable[str | Path]) -> DatasetSummary:
        """Renders, encodes and counts the samples of every successful episode of ``run_dirs``.

        Each is a run directory of ``hybrid-agent eval`` or an OSWorld result tree that
        ``hybrid-agent export-osworld`` wrote (its ``traj.jsonl`` folders).
        """
        for run_dir in map(Path, run_dirs):
            for record, frames in _episodes_of(run_dir):
                self.summary.episodes += 1
                if not self._successful(record):
                    continue
                self.summary.trajectories += 1
                self._add_episode(record, run_dir, frames)
        return self.summary

    def _successful(self, record: EpisodeRecord) -> bool:
        score = record.end.get("score")
        return record.end.get("error") is None and score is not None and score >= self.settings.min_score

    def _add_episode(self, record: EpisodeRecord, run_dir: Path, frames: Path) -> None:
        episode, unexecuted = rebuild_episode(record, run_dir, self.adapter, self.catalog, frames)
        self.summary.unexecuted += unexecuted
        self._episodes[record.path] = (run_dir, frames)
        for t, step in enumerate(episode.steps):
            messages = episode.context(t, self.context, self.cite_frames)
            prompt = self.encoder.encode(messages)
            response = target_ids(self.encoder, messages, self.target(step))
            if len(prompt) + len(response) > self.settings.max_tokens:
                self.summary.dropped += 1
                continue
            visual = image_token_runs(prompt, self.image_token)
            sample = SFTSample(record.task_id, record.run, t, record.path, list(prompt), response, visual)
            self.samples.append(sample)
            self.summary.samples += 1
            self.summary.tokens.append(sample.tokens)
            if visual:
                self.summary.current_tokens.append(visual[-1])
                self.summary.previous_tokens.extend(visual[:-1])

    def _rebuild(self, path: Path) -> RecordedEpisode:
        run_dir, frames = self._episodes[path]
        record = next(read_exported(frames)).record if path.name == TRAJECTORY else read_episode(path)
        return rebuild_episode(record, run_dir, self.adapter, self.catalog, frames)[0]

    def target(self, step: Step) -> str:
        """The assistant turn a step is learnt as: the adapter's rendering of it, reasoning kept."""
        return self.adapter.assistant_turn(step, keep_think=True)

    def __len__(self) -> int:
        """Samples kept."""
        return len(self.samples)

    def prompt(self, index: int) -> list[int]:
        """Sample ``index``'s prompt as the policy encodes it now (pixels too), checked against its ids.

        Raises:
            DatasetError: The re-rendered prompt differs from the stored one (the record, the
                code or the processor changed since the build).
        """
        sample = self.samples[index]
        messages = self._episode(sample.record).context(sample.step, self.context, self.cite_frames)
        prompt = self.encoder.encode(messages)
        if list(prompt) != sample.prompt_ids:
            raise DatasetError(
                f"The prompt of {sample.task_id} run {sample.run} step {sample.step} renders differently now "
                "than when the dataset was built."
            )
        return prompt
