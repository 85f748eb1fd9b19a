"""``osworld-mcp tasks fetch``: fills the local file cache from the tasks' ``download``/``cloud_file`` urls.

The env itself never downloads (``tasks/cache.py``); this is the one place that does,
run by hand before the episodes::

    jobs = plan_jobs(tasks, root)
    report = fetch(jobs, root, FetchConfig(hf_endpoint=..., hf_token=...))
    print(report.table())
"""

from osworld_mcp_env.tasks.fetch.manifest import MANIFEST_NAME, Entry, Manifest
from osworld_mcp_env.tasks.fetch.plan import FileJob, is_cached, plan_jobs
from osworld_mcp_env.tasks.fetch.run import FetchConfig, FetchReport, FileResult, Outcome, fetch

__all__ = [
    "MANIFEST_NAME",
    "Entry",
    "FetchConfig",
    "FetchReport",
    "FileJob",
    "FileResult",
    "Manifest",
    "Outcome",
    "fetch",
    "is_cached",
    "plan_jobs",
]
