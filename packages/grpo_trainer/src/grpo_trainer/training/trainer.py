"""The training loop: rollouts -> advantages -> several clipped-surrogate updates; exact checkpoints.

One training step rolls out ``tasks_per_step`` groups on every rank, scores them,
takes every kept sample's stored prompt (the ids and multimodal inputs the policy saw
at rollout time: nothing is re-rendered; ``engine.replay_check`` rebuilds each
context from the episode record and checks it against them, for debugging), then
runs ``updates_per_batch`` passes over the batch, each ``optim.minibatches`` optimizer
updates (one per mini-batch; 1: the whole batch), each over micro-batches of
``engine.micro_batch_size`` samples. What differs between plain torch and DeepSpeed
ZeRO (gathering weights for generation, backward, step, checkpoint files) is a
:class:`~grpo_trainer.training.backend.Backend`; the loop is this one.
A checkpoint holds model, optimizer, scheduler, every RNG stream and the step
counter, and its ``latest`` pointer moves last, so a run killed at any moment
resumes from its last checkpoint and reproduces the following steps exactly.

In async mode (``engine.mode = "async"``) a thread rolls out the next steps with a
copy of the policy while this loop updates (:mod:`grpo_trainer.rollouts.async_worker`); the
same rollout and update code runs, groups too stale are dropped before scoring, and
the updated weights are published to the copy after each step. A resumed async run
restarts the thread at the checkpoint's step, but which weights each sample saw
depends on thread timing, so it is not reproduced exactly. Metrics go through one
:class:`~grpo_trainer.training.metrics.MetricsSink` (JSONL and TensorBoard).
"""

from __future__ import annotations

import copy
import resource
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from hybrid_agent.labels import read_labels
from osworld_mcp_env.tasks.templates import task_labels

from grpo_trainer.config import GRPOConfig
from grpo_trainer.errors import ConfigError, GRPOError
from grpo_trainer.model.engines import make_engine
from grpo_trainer.model.inputs import InputCache
from grpo_trainer.model.packing import token_micro_batches
from grpo_trainer.model.policy import CachesInputs, TrainablePolicy, VersionedPolicy
from grpo_trainer.model.setup import prepare_policy
from grpo_trainer.objectives.advantage import GroupAdvantages, group_advantages
from grpo_trainer.objectives.loss import logprob_gap, policy_loss, truncated_is_weights
from grpo_trainer.objectives.rewards import RewardConfig, interface_unlabelled
from grpo_trainer.rollouts.async_worker import RolloutWorker, oldest_version, split_stale
from grpo_trainer.rollouts.continuous import ContinuousRollouts, RolloutJob, group_jobs
from grpo_trainer.rollouts.episode import Episode, StepSample
from grpo_trainer.rollouts.group import RolloutConfig, collect_group, rebuild_messages
from grpo_trainer.rollouts.tasks import group_task, resolve_tasks
from grpo_trainer.training.backend import Backend, make_backend
from grpo_trainer.training.checkpoints import (
    load_latest,
    restore_rng,
    rng_state,
    save_checkpoint,
    seed_everything,
)
from grpo_trainer.training.metrics import MetricsSink, summarize_updates
from grpo_trainer.training.optim import minibatch_bounds
from grpo_trainer.training.probes import probe_metrics, run_probe

__all__ = ["ReplayMismatch", "Trainer", "rollout_config"]


class ReplayMismatch(GRPOError):
    """The rebuilt prompt differs from the one the policy saw at rollout time."""


def rollout_config(config: GRPOConfig) -> RolloutConfig:
    """The rollout settings of a run (its ``[agent]`` section is evaluation's :class:`AgentConfig`)."""
    return RolloutConfig(
        group_size=config.rollout.group_size,
        temperature=config.rollout.temperature,
        agent=config.agent,
    )


def group_index(step: int, j: int, tasks_per_step: int, rank: int, world_size: int) -> int:
    """The global index of this rank's ``j``-th group of ``step`` (its task and seed follow from it).

    Ranks take consecutive blocks of ``tasks_per_step`` groups per step; ``j`` past the
    block (``j == tasks_per_step``) is this rank's first group of the next step, the one
    its envs reset to after the step's last group.
    """
    step, j = step + j // tasks_per_step, j % tasks_per_step
    return (step * world_size + rank) * tasks_per_step + j


class Trainer:
    """GRPO over a group vector env with one trainable policy, on a torch or DeepSpeed backend."""

    def __init__(
        self,
        config: GRPOConfig,
        policy: TrainablePolicy,
        venv: gym.vector.VectorEnv | None,
        run_dir: str | Path,
        reset_options: Callable[[int, int], dict[str, Any]] | None = None,
        *,
        desktops: Sequence[Callable[[], gym.Env]] | None = None,
        prepare_resets: bool | None = None,
    ) -> None:
        """Sets up the backend (optimizer, schedule) and RNGs; resumes from ``run_dir``'s checkpoint.

        Args:
            config: The run configuration.
            policy: The policy to train (its ``module`` holds the parameters); ``config.model``
                is applied to it here (:func:`~grpo_trainer.model.setup.prepare_policy`).
            venv: A group env of ``config.rollout.group_size`` members (one per rank); ``None``
                with ``desktops``.
            run_dir: Where checkpoints, ``metrics.jsonl`` and ``tensorboard/`` go (shared by the ranks).
            reset_options: ``(step, group) -> options`` added to each group's reset (labels, faults);
                in async mode it is called on the rollout thread; with desktops and prepared
                resets a step's are asked for a step early too (the jobs prepared ahead).
            desktops: One env factory per desktop (any number): rollouts are then continuous
                (:mod:`grpo_trainer.rollouts.continuous`): each desktop takes the step's next episode as
                soon as its last one ended, model calls batched across desktops, instead of
                one group at a time over ``venv``. ``config.rollout.executor`` says where their
                envs run (``sync``: here; ``ray``: one actor each, the factories pickled).
            prepare_resets: Whether the envs were made with prepared resets
                (:func:`grpo_trainer.rollouts.env_setup.env_kwargs` decides it); each reset then names
                the env's next task (``prepare_next``). ``None``: as ``config.env_kwargs`` says.

        Raises:
            ConfigError: Neither or both of ``venv`` and ``desktops``.
        """
        if (venv is None) == (desktops is None):
            raise ConfigError(
                "Pass the Trainer a group env (venv) or desktops for continuous rollouts, not both."
            )
        if prepare_resets is None:
            prepare_resets = bool(config.env_kwargs.get("prepare_resets"))
        self.prepare_resets = prepare_resets
        self.config = config
        self.policy = policy
        self.venv = venv
        self.run_dir = Path(run_dir)
        self.reset_options = reset_options or (lambda step, group: {})
        self.rollout_config = rollout_config(config)
        self.tasks = resolve_tasks(config.tasks, config.env_id)
        self.interface_labels = read_labels(config.reward.labels_file) if config.reward.labels_file else {}
        self._unlabelled: set[str] = set()
        self.step = 0
        self.updates = 0  # optimizer updates: the version of the weights, what staleness counts
        self.asynchronous = config.engine.mode == "async"
        if self.asynchronous and config.engine.max_staleness < config.optim.updates_per_step:
            # A group rolled out beside step s trains at step s + 1, updates_per_step updates later.
            warnings.warn(
                f"async mode: max_staleness = {config.engine.max_staleness} optimizer updates is below "
                f"the {config.optim.updates_per_step} updates of one step, so nearly every group "
                "rolled out ahead will be dropped as stale; raise max_staleness or lower "
                "updates_per_batch / minibatches.",
                stacklevel=2,
            )
        prepare_policy(policy, config)  # [model]: checkpointing, LoRA adapters
        # The async rollout copy is taken before a backend partitions the module (ZeRO-3); a colocated
        # engine (vLLM) claims its share of the GPU before the backend allocates.
        sampling = copy.deepcopy(policy) if self.asynchronous else policy
        self.rollout_engine = make_engine(config, sampling)
        self.rollout_policy = VersionedPolicy(sampling, sampler=self.rollout_engine)
        seed_everything(config.engine.seed)
        self.backend: Backend = make_backend(config, policy.module)
        # Each rank samples its own groups with its own stream; rank 0's is the one-process stream.
        self.generator = torch.Generator().manual_seed(config.engine.seed + self.backend.rank)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.continuous = (
            ContinuousRollouts(
                desktops,
                self.rollout_policy,
                self.rollout_config,
                self.generator,
                prepare_next=prepare_resets,
                executor=config.rollout.executor,
            )
            if desktops is not None
            else None
        )
        self._resume()
        self._publish()
        self.metrics = MetricsSink(self.run_dir, self.backend.rank, resume_step=self.step)

    # --- one step ------------------------------------------------------------------------
    def rollout(self) -> list[list[Episode]]:
        """This rank's groups of this step, the engine ready to sample (full weights gathered, or awake)."""
        with self.rollout_engine.generating(self.backend):
            return self._collect(self.step)

    def _collect(self, step: int) -> list[list[Episode]]:
        """This rank's groups of ``step``: task (a template's seed too) and seed follow from step and rank.

        Group by group over the group env, or all of them at once over the desktops
        (continuous rollouts).
        """
        if self.continuous is not None:
            # With prepared resets the desktops that run out of this step's jobs prepare the next step's.
            following = self.prepare_resets and step + 1 < self.config.optim.total_steps
            upcoming = self._jobs(step + 1) if following else []
            return self.continuous.collect(self._jobs(step), upcoming)
        seed = self.config.engine.seed
        assert self.venv is not None  # one of the two, checked at construction
        return [
            collect_group(
                self.venv,
                self.rollout_policy,
                task,
                seed=seed + index,
                group=index,
                config=self.rollout_config,
                generator=self.generator,
                reset_options=options,
            )
            for index, task, options in self._group_plans(step)
        ]

    def _jobs(self, step: int) -> list[RolloutJob]:
        """The continuous rollout jobs of ``step``: G per group of :meth:`_group_plans`, in order."""
        seed, size = self.config.engine.seed, self.config.rollout.group_size
        return [
            job
            for i, task, opts in self._group_plans(step)
            for job in group_jobs(task, i, seed + i, size, opts)
        ]

    def _group_plans(self, step: int) -> Iterator[tuple[int, Any, dict[str, Any]]]:
        """``(group index, task, reset options)`` of this rank's groups of ``step``, one at a time.

        Lazily: ``reset_options`` is called for a group just before it rolls out. With
        prepared resets over the group env, each group's reset also names the task this
        rank resets to next (``prepare_next``), so the env sets that episode up on a fresh
        desktop beside the running one (continuous rollouts name it per desktop instead).
        """
        n = self.config.rollout.tasks_per_step
        rank, world_size = self.backend.rank, self.backend.world_size
        prepare = self.prepare_resets and self.continuous is None
        seed = self.config.engine.seed
        for j in range(n):
            index = group_index(step, j, n, rank, world_size)
            task = group_task(self.tasks, index, seed)
            options = self._with_label(task, dict(self.reset_options(step, j)))
            if prepare:
                following = group_index(step, j + 1, n, rank, world_size)
                options["prepare_next"] = group_task(self.tasks, following, seed)
            yield index, task, options

    def _with_label(self, task: Any, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` with the task's interface label from ``[reward] labels_file`` (reset labels win).

        A task the interface bonus would pay on without any label is named once: its bonus is off.
        """
        label = self.interface_labels.get(str(task))
        labels = dict(options.get("labels", {}))
        if label is not None:
            labels.setdefault("preferred_interface", label)
            return {**options, "labels": labels}
        bonus_on = "interface_preference" in self.config.reward.return_terms
        unlabelled = "preferred_interface" not in {**task_labels(task), **labels}
        if bonus_on and unlabelled and str(task) not in self._unlabelled:
            self._unlabelled.add(str(task))
            source = self.config.reward.labels_file or "no [reward] labels_file"
            warnings.warn(
                f"Task {task} has no interface label ({source} does not label it and it has no "
                "label of its own): its interface bonus is off.",
                stacklevel=2,
            )
        return options

    def _publish(self) -> dict[str, float]:
        """Hands the weights after ``self.updates`` optimizer updates (their version) to the rollout policy.

        In sync mode it is the trained policy itself; in async mode its copy gets the
        full weights (gathered by the backend, on every rank at the same step). A rollout
        engine with weights of its own (vLLM) gets them too; returns its timing metrics.
        """
        synced = self.rollout_engine.sync_weights(self.policy.module)
        if not self.asynchronous:
            self.rollout_policy.publish(self.updates)
            return synced
        with self.backend.generation():
            self.rollout_policy.publish(self.updates, self.policy.module.state_dict())
        return synced

    def _batch(self, scored: list[GroupAdvantages]) -> dict[str, Any] | None:
        """The kept samples as lists (stored prompt ids, response ids, old log-probs, advantage)."""
        prompts, responses, old, advantages = [], [], [], []
        for group in scored:
            if not group.kept:
                continue
            for episode, per_step in zip(group.episodes, group.advantages, strict=True):
                for sample, advantage in zip(episode.samples, per_step, strict=True):
                    if self.config.engine.replay_check:
                        self._replay(episode, sample)
                    prompts.append(sample.prompt_ids)
                    responses.append(sample.response_ids)
                    old.append(sample.old_logprobs)
                    advantages.append(float(advantage))
        if not prompts:
            return None
        return {"prompts": prompts, "responses": responses, "old": old, "advantages": advantages}

    def _replay(self, episode: Episode, sample: StepSample) -> None:
        """Rebuilds ``sample``'s context from the record; raises unless it encodes to the stored ids."""
        ids = self.policy.encode(rebuild_messages(episode, sample, self.rollout_config.context))
        if list(ids) != list(sample.prompt_ids):
            raise ReplayMismatch(
                f"Step {sample.index} of {episode.task_id}#{episode.member}: the rebuilt "
                "context differs from the one the policy saw."
            )

    def _micro_rows(self, batch: dict[str, Any]) -> list[list[int]]:
        """Row indices of each micro-batch: by ``[optim] micro_batch_tokens`` or ``micro_batch_size``.

        A sample without response tokens (a prompt over ``max_prompt_tokens``) has nothing
        to train and is left out.
        """
        keep = [i for i, response in enumerate(batch["responses"]) if response]
        budget = self.config.optim.micro_batch_tokens
        if budget:
            lengths = [len(batch["prompts"][i]) + len(batch["responses"][i]) for i in keep]
            padded = self.config.optim.packing == "padded"
            return [[keep[j] for j in rows] for rows in token_micro_batches(lengths, budget, padded=padded)]
        size = self.config.engine.micro_batch_size or max(len(keep), 1)
        return [keep[lo : lo + size] for lo in range(0, len(keep), size)]

    def _micro_batches(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
        """The micro-batches of :meth:`_micro_rows` as padded tensors (all samples when unsized)."""
        out = []
        for rows in self._micro_rows(batch):
            responses = [batch["responses"][i] for i in rows]
            old = [batch["old"][i] for i in rows]
            length = max(len(r) for r in responses)
            advantages = torch.tensor([batch["advantages"][i] for i in rows])
            out.append(
                {
                    "prompts": [batch["prompts"][i] for i in rows],
                    "responses": responses,
                    "old": torch.tensor([o + [0.0] * (length - len(o)) for o in old]),
                    "advantages": advantages.unsqueeze(1).expand(-1, length),
                    "mask": torch.tensor([[1.0] * len(r) + [0.0] * (length - len(r)) for r in responses]),
                }
            )
        return out

    def _cached_inputs(self) -> AbstractContextManager[InputCache | None]:
        """The policy's input cache for one batch's scoring and updates (``None``: none, or it is off)."""
        if self.config.optim.cache_inputs and isinstance(self.policy, CachesInputs):
            return self.policy.cached_inputs()
        return nullcontext()

    def _filler(self, groups: list[list[Episode]]) -> dict[str, Any] | None:
        """A one-sample micro-batch of any episode of ``groups`` (for passes of weight 0); ``None``: none."""
        for sample in (s for group in groups for episode in group for s in episode.samples):
            if sample.response_ids:
                one = {
                    "prompts": [sample.prompt_ids],
                    "responses": [sample.response_ids],
                    "old": [sample.old_logprobs],
                    "advantages": [0.0],
                }
                return self._micro_batches(one)[0]
        return None

    def _update(
        self, micro: list[dict[str, Any]], rounds: int, filler: dict[str, Any] | None = None
    ) -> dict[str, float]:
        """One optimizer update over ``micro``: the token-mean loss of the whole batch.

        Each micro-batch's loss is weighted by its share of the tokens. Past ``len(micro)``,
        up to ``rounds`` passes of weight 0 follow (over ``filler``, by default the last
        micro-batch), so every rank runs as many forward/backward passes as the busiest
        one (ZeRO-3 gathers parameters collectively in each), a rank without kept samples
        included.
        """
        optim = self.config.optim
        filler = filler if filler is not None else micro[-1]
        tokens = sum(float(m["mask"].sum()) for m in micro)
        totals: dict[str, float] = {"train/loss": 0.0}
        for i in range(rounds):
            real = i < len(micro)
            mb = micro[i] if real else filler
            weight = float(mb["mask"].sum()) / tokens if real else 0.0
            with self.backend.forward():
                logprobs = self.policy.logprobs(
                    mb["prompts"], mb["responses"], self.config.rollout.temperature
                )
            cap = self.config.loss.tis_cap
            old, weights = mb["old"], None
            if cap is not None:  # the trainer's own rollout-time log-probs are the old policy
                old = mb["train_old"]
                weights = truncated_is_weights(old, mb["old"], mb["mask"], cap)
            loss, metrics = policy_loss(
                logprobs.float(), old, mb["advantages"], mb["mask"], optim.clip_eps, optim.kl_beta, weights
            )
            self.backend.backward(loss * weight, last=i == rounds - 1)
            if not real:
                continue
            totals["train/loss"] += float(loss.detach()) * weight
            for key, value in metrics.items():
                if key == "train/ratio_min":
                    totals[key] = min(totals.get(key, value), value)
                elif key == "train/ratio_max":
                    totals[key] = max(totals.get(key, value), value)
                else:
                    totals[key] = totals.get(key, 0.0) + (value if key == "train/tokens" else value * weight)
        grad_norm = self.backend.step()
        self.updates += 1
        return {**totals, "train/grad_norm": grad_norm}

    def _score_old(
        self, micros: list[list[dict[str, Any]]], filler: dict[str, Any] | None
    ) -> dict[str, float]:
        """The trainer's log-probs of the sampled tokens before any update (``train_old``); the gap metrics.

        Run when the engine has weights of its own (vLLM) or ``[loss] tis_cap`` is set. Each
        micro-batch (and the filler) gets ``train_old``; every rank runs as many forward
        passes as the busiest (ZeRO-3 gathers collectively). Returns :func:`logprob_gap` of
        the engine's log-probs against them over every kept token.
        """
        if self.rollout_engine.shares_weights and self.config.loss.tis_cap is None:
            return {}
        todo = [m for part in micros for m in part]
        if filler is not None and all(filler is not m for m in todo):
            todo.append(filler)
        passes = self.backend.agree(len(todo), "max")
        temperature = self.config.rollout.temperature
        with torch.no_grad():
            for i in range(passes):
                mb = todo[i] if i < len(todo) else filler
                assert mb is not None  # train is only set when every rank has a filler
                with self.backend.forward():
                    scored = self.policy.logprobs(mb["prompts"], mb["responses"], temperature)
                mb["train_old"] = scored.float().cpu()
        real = [m for part in micros for m in part]
        if not real:
            return {}
        keep = [m["mask"] > 0 for m in real]
        train = torch.cat([m["train_old"][k] for m, k in zip(real, keep, strict=True)])
        engine = torch.cat([m["old"][k] for m, k in zip(real, keep, strict=True)])
        return logprob_gap(train, engine, torch.ones_like(train))

    def train_step(self) -> dict[str, Any]:
        """One rollout batch and its updates; returns (and logs) this rank's metrics."""
        t0 = time.perf_counter()
        groups = self.rollout()
        return self._learn(groups, {"time/rollout_s": time.perf_counter() - t0})

    def _learn(self, groups: list[list[Episode]], timings: dict[str, float]) -> dict[str, Any]:
        """Scores ``groups``, runs the step's updates, publishes, logs and checkpoints."""
        t1 = time.perf_counter()
        scored = [group_advantages(g, self.config.reward, self.config.advantage) for g in groups]
        batch = self._batch(scored)
        optim = self.config.optim
        # One list of micro-batches per mini-batch ([optim] minibatches), each one optimizer update.
        micros = []
        if batch is not None:
            bounds = minibatch_bounds(len(batch["prompts"]), optim.minibatches)
            rows = [{k: v[lo:hi] for k, v in batch.items()} for lo, hi in bounds]
            micros = [self._micro_batches(part) for part in rows]
        micros += [[]] * (optim.minibatches - len(micros))
        # Every rank must take the same updates. They train when any has kept samples; a rank
        # without (or with an empty mini-batch) joins with passes of weight 0 over a sample of its
        # own, so a step is lost only when some rank has no sample at all (every episode crashed
        # before its first model call).
        filler = next((m[-1] for m in micros if m), None) or self._filler(groups)
        rounds = self.backend.agree(max(map(len, micros)), "max")
        train = rounds > 0 and self.backend.agree(int(filler is not None), "min") == 1
        t2 = time.perf_counter()
        with self._cached_inputs() as cache:
            offpolicy = self._score_old(micros, filler) if train else {}
            passes = optim.updates_per_batch if train else 0
            updates = [self._update(micro, rounds, filler) for _ in range(passes) for micro in micros]
        synced = self._publish() if updates else {}
        t3 = time.perf_counter()
        metrics: dict[str, Any] = {**_rollout_metrics(scored, self.config.reward), **offpolicy, **synced}
        if cache is not None:
            metrics.update({"train/input_cache_hits": cache.hits, "train/input_cache_misses": cache.misses})
        metrics["rollout/tasks"] = [g[0].task_id for g in groups]  # ids with template seeds; JSONL only
        metrics.update(summarize_updates(updates))
        metrics.update(
            {
                "step": self.step,
                **timings,
                "time/score_s": t2 - t1,
                "time/update_s": t3 - t2,
                "memory/peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "lr": self.backend.lr(),
            }
        )
        self.step += 1
        if self.config.probe.every and self.step % self.config.probe.every == 0:
            metrics.update(self._probe())
        self.metrics.write(metrics)
        if self.step % self.config.engine.save_every == 0:
            self.save()
        return metrics

    def _probe(self) -> dict[str, Any]:
        """A greedy probe of this step's weights on the held-out tasks (:mod:`grpo_trainer.training.probes`).

        Every rank probes its share with the full weights gathered, then waits for the
        others, so each rank logs the metrics of the whole probe.
        """
        started = time.perf_counter()
        settings, config = self.config.probe, self.config
        out = self.run_dir / "probes"

        def make_env() -> gym.Env:
            return gym.make(config.env_id, **{**config.env_kwargs, "max_steps": settings.max_steps})

        with self.backend.generation():
            run_probe(
                self.policy,
                self.step,
                settings,
                out,
                make_env,
                agent=config.agent,
                rank=self.backend.rank,
                world_size=self.backend.world_size,
            )
        self.backend.agree(1, "min")  # every rank's episodes are on disk before any reads them
        ranks = [out / f"step_{self.step}" / f"rank{r}" for r in range(self.backend.world_size)]
        return {**probe_metrics(ranks), "time/probe_s": time.perf_counter() - started}

    def train(self) -> list[dict[str, Any]]:
        """Runs steps until ``optim.total_steps``, sync or async as the config says."""
        steps = range(self.step, self.config.optim.total_steps)
        if not self.asynchronous:
            return [self.train_step() for _ in steps]
        engine = self.config.engine
        worker = RolloutWorker(self._collect, steps, engine.queue_size)
        logs = []
        try:
            for _ in steps:
                t0 = time.perf_counter()
                batch = worker.next()
                waited = time.perf_counter() - t0
                fresh, stale = split_stale(batch.groups, self.updates, engine.max_staleness)
                behind = [self.updates - v for v in map(oldest_version, batch.groups) if v is not None]
                timings = {
                    "time/rollout_s": batch.seconds,
                    "time/wait_s": waited,
                    "async/stale_groups": float(len(stale)),
                    "async/staleness_max": float(max(behind, default=0)),
                }
                logs.append(self._learn(fresh, timings))
        finally:
            worker.close()
        return logs

    # --- checkpoints ---------------------------------------------------------------------
    def save(self) -> Path:
        """Writes the backend's checkpoint of this step, then (rank 0) points ``latest`` at it.

        Only then does rank 0 remove checkpoints past ``[checkpoint] keep_last``, so a kill at
        any moment leaves ``latest`` naming a complete checkpoint.
        """
        state = {
            "config": self.config.to_dict(),
            "step": self.step,
            "updates": self.updates,
            "rng": rng_state(self.generator),
        }
        folder = self.run_dir / "checkpoints"
        return save_checkpoint(self.backend, folder, self.step, state, self.config.checkpoint.keep_last)

    def _resume(self) -> None:
        state = load_latest(self.backend, self.run_dir / "checkpoints", self.config.to_dict())
        if state is None:
            return
        restore_rng(state["rng"], self.generator)
        self.step, self.updates = state["step"], state["updates"]


def _rollout_metrics(scored: list[GroupAdvantages], rewards: RewardConfig) -> dict[str, float]:
    episodes = [e for g in scored for e in g.episodes]
    returns = [r for g in scored for r in g.returns]
    adopted = [any(s.is_mcp and s.exec_ok for s in e.samples) for e in episodes]
    return {
        "rollout/reward": float(np.mean(returns)) if returns else float("nan"),
        "rollout/success": float(np.mean([g.success_rate for g in scored])) if scored else float("nan"),
        "rollout/adoption": float(np.mean(adopted)) if adopted else float("nan"),
        "rollout/crashed": float(sum(g.crashed for g in scored)),
        "rollout/groups_kept": float(sum(g.kept for g in scored)),
        "rollout/samples": float(sum(e.length for g in scored if g.kept for e in g.episodes)),
        # The interface term is on but the task has no preferred_interface: it paid 0.
        "reward/interface_unlabelled": float(sum(interface_unlabelled(e, rewards) for e in episodes)),
    }
