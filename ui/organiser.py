"""The Organiser tab: studies (create, list, close, reopen) and results (runs, summaries,
conversations, compare, exports).

Every handler checks the organiser secret itself (constant-time, ``AppServices.check_secret``)
before it does anything, and none is exposed as an API endpoint. :class:`OrganiserHandlers`
holds the handlers (plain functions of the page's inputs, testable without a browser);
:func:`build_organiser` lays out the tab and wires them.
"""
from __future__ import annotations

from typing import Any, Callable

import gradio as gr

from harness.live import results
from harness.live.guards import LiveError
from harness.live.services import AppServices
from harness.live.studies import StudySpec

STUDY_COLUMNS = ["id", "name", "status", "mode", "agents", "participants", "sessions", "ended", "link"]


def warn(exc: Exception) -> str:
    """A refusal or error as the status line shows it (a warning sign, then the message)."""
    return f"⚠️ {exc}"


class OrganiserHandlers:
    """The tab's handlers. :meth:`guarded` wraps one so that it first checks the secret and
    turns a refusal into a warning in the tab's status line (its first output)."""

    def __init__(self, services: AppServices):
        self.services = services
        self.reader, self.store, self.studies = services.reader, services.live.store, services.studies
        self.out_dir = services.out_dir

    def guarded(self, fn: Callable[..., tuple], n_out: int) -> Callable[..., tuple]:
        """Wrap ``fn`` (of ``n_out`` outputs) so that it takes the secret first and checks it;
        a wrong secret, a LiveError or a ValueError shows a warning and leaves the other
        outputs unchanged."""
        def wrapper(secret, *args):
            try:
                self.services.check_secret(secret)
                return fn(*args)
            except (LiveError, ValueError) as exc:
                return (warn(exc), *([gr.update()] * (n_out - 1)))
        return wrapper

    # -- studies ---------------------------------------------------------------------------
    def study_link(self, study_id: str) -> str:
        """The app's address as launched (a host of 0.0.0.0 stands for this machine's address)."""
        return f"{self.services.app_url.rstrip('/')}/?study={study_id}"

    def studies_table(self) -> list[list[Any]]:
        """Rows of the studies table (``STUDY_COLUMNS``): counts of participants, sessions and
        ended sessions, and the link participants join at."""
        rows = []
        for s in self.store.studies():
            sessions = self.store.sessions_of_study(s["id"])
            rows.append([s["id"], s["name"], s["status"], s["config"]["mode"],
                         ", ".join(s["config"]["agents"]),
                         len({x["participant_id"] for x in sessions}), len(sessions),
                         sum(x["status"] == "ended" for x in sessions), self.study_link(s["id"])])
        return rows

    def studies_outputs(self, note: str = "") -> tuple:
        """(note, the studies table, the study picker's choices)."""
        table = self.studies_table()
        return (note, table, gr.update(choices=[(f"{r[1]} ({r[0]}, {r[2]})", r[0]) for r in table]))

    def show_studies(self) -> tuple:
        """Show studies: the table and the study picker, with no note."""
        return self.studies_outputs()

    def create_study(self, name, dataset, limit, agents, mode, max_sessions, consent) -> tuple:
        """Create a study from the form (raises LiveError or ValueError on an invalid one);
        the note gives its participants' link."""
        spec = StudySpec(name=name, dataset=dataset, task_limit=int(limit) if limit else None,
                         agents=list(agents or []), mode=mode, max_sessions=int(max_sessions or 1),
                         consent=consent)
        study_id = self.studies.create(spec)
        return self.studies_outputs(f"Study created. Participants join at **{self.study_link(study_id)}**")

    def close_study(self, study_id: str | None) -> tuple:
        """Close the chosen study to new participants; its data and joined participants stay."""
        study = self.studies.close(self._chosen(study_id))
        return self.studies_outputs(
            f"Study **{study['name']}** ({study['id']}) is closed: new participants are refused; "
            "those who joined may finish; all its data is kept. Reopen it to admit new ones.")

    def reopen_study(self, study_id: str | None) -> tuple:
        """Admit new participants to the chosen study again; the note gives its link."""
        study = self.studies.reopen(self._chosen(study_id))
        return self.studies_outputs(
            f"Study **{study['name']}** ({study['id']}) is open again: participants join at "
            f"**{self.study_link(study['id'])}**")

    @staticmethod
    def _chosen(study_id: str | None) -> str:
        if not study_id:
            raise LiveError("Choose a study first (press 'Show studies' to list them).")
        return study_id

    # -- results ---------------------------------------------------------------------------
    def list_runs(self) -> tuple:
        """(no note, the runs table, the run picker's and the compare picker's choices)."""
        rows = results.runs_table(self.reader)
        choices = [(f"{r[1]} ({r[0]})", r[0]) for r in rows]
        return ("", rows, gr.update(choices=choices), gr.update(choices=choices))

    def show_run(self, run_id) -> tuple:
        """(no note, the run's report, its distributions PNG, the conversation picker set to its
        first conversation); raises LiveError without a run."""
        if not run_id:
            raise LiveError("Choose a run.")
        text, png = results.run_summary(self.reader, self.store, run_id, self.out_dir)
        convs = results.conversations(self.reader, run_id)
        return ("", text, str(png), gr.update(choices=convs, value=convs[0][1] if convs else None))

    def show_conversation(self, interaction_id) -> tuple:
        """(no note, the conversation turn by turn with its judgments; "" without one)."""
        if not interaction_id:
            return ("", "")
        return ("", results.conversation_markdown(self.reader, self.store, interaction_id))

    def compare(self, run_ids) -> tuple:
        """Write the comparison report of the chosen runs under ``out_dir/compare``; returns (no
        note, its text summary as a code block, the report's path)."""
        if not run_ids:
            raise LiveError("Choose one or more runs to compare.")
        from harness.study.compare import compare as compare_runs
        path, text = compare_runs(self.reader, run_ids, self.out_dir / "compare")
        return ("", f"```\n{text}\n```", str(path))

    def export(self, run_id) -> tuple:
        """Export the chosen run (with its live sessions and human ratings) under
        ``out_dir/exports``; returns (no note, the written files' paths)."""
        if not run_id:
            raise LiveError("Choose a run.")
        folder = self.out_dir / "exports" / results._safe(run_id)
        return ("", [str(p) for p in results.export_with_sessions(self.reader, self.store, run_id, folder)])


def build_organiser(services: AppServices) -> None:
    """Study set-up and results; every handler checks the organiser secret first."""
    h = OrganiserHandlers(services)
    gr.Markdown("# Organiser\nStudies and results. Enter the organiser secret first.")
    secret = gr.Textbox(label="Organiser secret", type="password", elem_id="organiser-secret")
    note = gr.Markdown(elem_id="organiser-status")
    with gr.Accordion("Create a study", open=False):
        s_name = gr.Textbox(label="Name")
        s_dataset = gr.Textbox(label="Task pool (built-in name or JSONL path)",
                               value=services.config.run.dataset)
        s_limit = gr.Number(label="Tasks from the pool (first N)", value=20, precision=0)
        # the app's agents (``app.agents``): plain, rag with --kb, or a team's own (--agent http ...)
        agents = services.config.app.agents
        s_agents = gr.CheckboxGroup(agents, value=agents[:1], label="Agents")
        s_mode = gr.Radio([("Participants ask (they are the user)", "user"),
                           ("Participants answer (they are the agent)", "agent")],
                          value="user", label="Mode")
        s_max = gr.Number(label="Conversations per participant", value=3, precision=0)
        s_consent = gr.Textbox(label="Consent text", lines=4, value=StudySpec(name="").consent)
        s_create = gr.Button("Create study", variant="primary")
    studies_df = gr.Dataframe(headers=STUDY_COLUMNS, label="Studies", interactive=False,
                              elem_id="studies")
    s_refresh = gr.Button("Show studies", elem_id="show-studies")
    with gr.Row():
        s_pick = gr.Dropdown(label="Study", choices=[], elem_id="study-pick")
        s_close = gr.Button("Close study (no new participants)", elem_id="close-study")
        s_reopen = gr.Button("Reopen study", elem_id="reopen-study")
    gr.Markdown("## Results")
    runs_btn = gr.Button("Show runs", elem_id="show-runs")
    runs_df = gr.Dataframe(headers=["id", "name", "kind", "status", "done", "dataset", "created"],
                           label="Runs", interactive=False, elem_id="runs")
    run_pick = gr.Dropdown(label="Run", choices=[], elem_id="run-pick")
    run_md = gr.Markdown(elem_id="run-summary")
    run_png = gr.Image(label="Distributions", type="filepath")
    conv_pick = gr.Dropdown(label="Conversation", choices=[])
    conv_md = gr.Markdown(elem_id="conversation")
    cmp_pick = gr.Dropdown(label="Compare runs", choices=[], multiselect=True)
    cmp_btn = gr.Button("Compare")
    cmp_md = gr.Markdown()
    cmp_file = gr.File(label="Comparison report (HTML)")
    exp_btn = gr.Button("Export the chosen run")
    exp_files = gr.File(label="Exports", file_count="multiple")

    studies_out = [note, studies_df, s_pick]
    private = {"api_visibility": "private"}
    s_create.click(h.guarded(h.create_study, 3), [secret, s_name, s_dataset, s_limit, s_agents,
                                                  s_mode, s_max, s_consent], studies_out, **private)
    s_refresh.click(h.guarded(h.show_studies, 3), [secret], studies_out, **private)
    s_close.click(h.guarded(h.close_study, 3), [secret, s_pick], studies_out, **private)
    s_reopen.click(h.guarded(h.reopen_study, 3), [secret, s_pick], studies_out, **private)
    runs_btn.click(h.guarded(h.list_runs, 4), [secret], [note, runs_df, run_pick, cmp_pick], **private)
    run_pick.change(h.guarded(h.show_run, 4), [secret, run_pick], [note, run_md, run_png, conv_pick],
                    **private)
    conv_pick.change(h.guarded(h.show_conversation, 2), [secret, conv_pick], [note, conv_md], **private)
    cmp_btn.click(h.guarded(h.compare, 3), [secret, cmp_pick], [note, cmp_md, cmp_file], **private)
    exp_btn.click(h.guarded(h.export, 2), [secret, run_pick], [note, exp_files], **private)

