"""Type stubs of the native module (``bagscope._bagscope``, built from crates/python/src)."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

Duration = Union[str, float, int]
"""A duration: a string with a unit (``"50ms"``, ``"2s"``) or seconds (``0.05``, ``"0.05"``)."""

Report = Dict[str, Any]
"""A report as the CLI prints it with ``--json``, parsed by :func:`json.loads`."""

__version__: str

class Table:
    """An Arrow table (``__arrow_c_stream__``): read it with ``pyarrow.table(t)``,
    ``polars.from_arrow(t)`` / ``polars.DataFrame(t)`` or ``duckdb.sql("... from t")``; the
    columns are not copied. Strings are Arrow view types (``string_view``)."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """A PyCapsule named ``arrow_array_stream`` holding the table's record batches."""
    @property
    def num_rows(self) -> int:
        """Number of rows."""
    @property
    def column_names(self) -> List[str]:
        """Column names, in order."""
    @property
    def report(self) -> Optional[Report]:
        """The scan's report (``export --json``'s keys: ``bag``, ``tables``, ``warnings``);
        None for a summary table."""
    @property
    def data_loss(self) -> bool:
        """Whether a warning of the scan says messages were lost."""
    def __len__(self) -> int: ...

class TimingBatches:
    """``Bag.timing()``'s table as a stream of record batches (``__arrow_c_stream__``): read it
    with ``pyarrow.RecordBatchReader.from_stream(s)``, ``polars.DataFrame(s)`` or
    ``duckdb.sql("... from s")``. Each stream taken reads the bag again, a batch at a time, and
    stops when the consumer releases it."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """A PyCapsule named ``arrow_array_stream`` holding the record batches."""
    @property
    def column_names(self) -> List[str]:
        """Column names, in order."""
    @property
    def rows_per_batch(self) -> int:
        """Rows per batch (the last one may hold fewer)."""
    @property
    def report(self) -> Report:
        """The first read's report (``export --json``'s keys); ``tables[0]["rows"]`` is set
        once a stream has been read to its end."""
    @property
    def data_loss(self) -> bool:
        """Whether a warning of the first read says messages were lost."""

class Bag:
    """An opened bag; every method releases the GIL while it reads, and a Bag may be used
    from several threads at once."""

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Opens the bag at ``path`` (see :func:`bagscope.open`)."""
    @staticmethod
    def from_bytes(buffer: Any, name: str = "bag.mcap") -> "Bag":
        """A single-file bag (``.mcap``; ``.db3`` when ``name`` ends so) held in memory: any
        object with the buffer protocol (``bytes``, ``memoryview``, ``mmap``). The bytes are
        written once into a private temporary folder as ``name``, memory-mapped from there
        and removed with the Bag; reports name that temporary file."""
    @property
    def path(self) -> str:
        """The path the bag was opened from."""
    @property
    def topics(self) -> List[str]:
        """The bag's topic names, sorted."""
    def info(self, fast: bool = False, *, sort: str = "name") -> Report:
        """``bagscope info --json`` (``fast``: ``info --fast``; ``sort``: name, count, size or
        rate)."""
    def clocks(self, clock_topic: Optional[str] = None, gap_factor: float = 3.0) -> Report:
        """``bagscope clocks --json``."""
    def check(
        self,
        limits: Optional[Union[Mapping[str, Tuple[float, float]], str, "os.PathLike[str]"]] = None,
        max_command_age: Optional[Duration] = None,
    ) -> Report:
        """``bagscope check --json``; ``limits``: joint → (min, max), or a JSON file's path."""
    def sync(
        self,
        topics: Sequence[str],
        policy: str = "approx-py",
        queue: int = 10,
        slop: Optional[Duration] = None,
        *,
        age_penalty: Optional[float] = None,
        max_interval: Optional[Duration] = None,
        lower_bounds: Optional[Mapping[str, Duration]] = None,
        queue_offsets: Optional[Mapping[str, Duration]] = None,
        epsilon: Optional[Duration] = None,
        rate_config: Optional[Sequence[str]] = None,
        allow_headerless: bool = False,
        sync_arrival_time: bool = False,
        recommend: bool = False,
        speed: Optional[float] = None,
        fx: Optional[float] = None,
        depth: Optional[float] = None,
        pixel_budget: Optional[float] = None,
        evidence: Optional[Union[str, "os.PathLike[str]"]] = None,
        evidence_drops: Optional[Union[str, "os.PathLike[str]"]] = None,
        max_age: Optional[Duration] = None,
        anchor: Optional[str] = None,
        tf_target: Optional[str] = None,
        tf_topics: Optional[Sequence[str]] = None,
        tf_buffer: Optional[Duration] = None,
    ) -> Report:
        """``bagscope sync --json``: the synchronizer emulated message for message (with
        ``recommend``, as :meth:`recommend`). A parameter that does not apply to the policy
        raises :class:`InvalidParameter`; a unitless ``slop`` (seconds) far above the topics'
        periods is warned about (``slop_unit_suspect``), as on the CLI."""
    def recommend(
        self,
        topics: Sequence[str],
        policy: str = "approx-py",
        queue: int = 10,
        *,
        max_interval: Optional[Duration] = None,
        speed: Optional[float] = None,
        fx: Optional[float] = None,
        depth: Optional[float] = None,
        pixel_budget: Optional[float] = None,
        allow_headerless: bool = False,
        sync_arrival_time: bool = False,
    ) -> Report:
        """``bagscope sync --recommend --json``: a slop and queue size for the topics."""
    def match(
        self,
        command: str,
        response: str,
        *,
        command_field: Optional[str] = None,
        response_field: Optional[str] = None,
        names_field: Optional[str] = None,
        align: str = "stamps",
        clock_topic: Optional[str] = None,
        response_kind: Optional[str] = None,
        search: Union[str, Tuple[Duration, Duration]] = "0..500ms",
        window: Optional[Union[str, Tuple[Duration, Duration]]] = None,
        keep_still: bool = False,
        bucket: Optional[Duration] = None,
        interpolate: bool = True,
        one_to_one: bool = False,
        max_pair_distance: Optional[Duration] = None,
        continuous: Optional[Sequence[str]] = None,
        limits: Optional[Union[Mapping[str, Tuple[float, float]], str, "os.PathLike[str]"]] = None,
        max_command_age: Optional[Duration] = None,
    ) -> Report:
        """``bagscope match --json``: command → response delay and tracking error."""
    def tf(
        self,
        target_frame: str,
        topics: Sequence[str],
        *,
        queue: int = 10,
        buffer: Duration = "10s",
        tf_topics: Sequence[str] = ("/tf", "/tf_static"),
        evidence: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> Report:
        """``bagscope tf --json``: what ``tf2_ros::MessageFilter`` would have done with each
        message of ``topics`` for ``target_frame``."""
    def hist(self, topics: Sequence[str], *, bins: int = 60) -> Report:
        """``bagscope hist --json``: stamp differences to the nearest partner, periods, lag."""
    def report_data(
        self,
        pairs: Optional[Sequence[Tuple[str, str]]] = None,
        contract: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> Report:
        """What ``bagscope report`` writes as ``report.json`` but the page's ``sections``,
        ``plots`` and ``unplotted_topics``: info, clocks and check from one scan, sensor
        pairs synchronized, command/response ``pairs`` matched, observations under the
        ``contract`` file, the verdicts."""
    def timing(self, topics: Optional[Sequence[str]] = None) -> Table:
        """One row per message: ``export --timing-only``'s columns and ``lag_ns``; the string
        columns (``bag``, ``topic``, ``type``, ``clock_axis``, ``parent_frame``,
        ``child_frame``) dictionary-encoded."""
    def timing_batches(
        self, rows_per_batch: int = 65536, topics: Optional[Sequence[str]] = None
    ) -> TimingBatches:
        """``timing()``'s rows as a stream of record batches of ``rows_per_batch`` rows, in
        bounded memory: a first read decides each topic's ``clock_axis``, every stream taken
        reads the rows again, a batch at a time."""
    def messages(
        self, topic: str, fields: Optional[Sequence[str]] = None, explode: bool = False
    ) -> Table:
        """The topic's messages with their fields flattened, as ``export`` writes them."""
    def summary(self, name: Optional[str] = None) -> Table:
        """The bag's rows of ``batch``'s ``summary.parquet``."""

def batch_name(path: str) -> str:
    """The name ``bagscope batch`` gives a bag found directly in an input folder."""

def summary_columns() -> List[str]:
    """The columns of ``summary.parquet``, in order."""

def empty_summary() -> Table:
    """A summary table without rows (its columns and types)."""

def _default_matches(method: str, name: str, value: Any) -> bool:
    """Whether ``value`` is what ``method``'s parameter ``name`` is when not given (None: that
    it has no value by default): how this stub's defaults are tested."""

def _positional(method: str) -> List[str]:
    """The positional parameters of ``method``, in order."""
