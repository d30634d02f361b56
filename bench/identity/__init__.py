"""Vector and score identity across serving paths, with the cause named when they disagree.

from bench.endpoints import parse_endpoint_spec
from bench.identity import IdentityRequest, from_texts, run_identity
report = run_identity(IdentityRequest([parse_endpoint_spec("ref=reference"), parse_endpoint_spec(
    "inf=openai@http://127.0.0.1:7997?model=all-MiniLM-L6-v2")], from_texts(Path("texts.txt"))))
report.passed
"""

from bench.identity.inputs import IdentityInput, from_dataset, from_texts
from bench.identity.outcome import IdentityResult
from bench.identity.run import IdentityRequest, run_identity

__all__ = ["IdentityInput", "IdentityRequest", "IdentityResult", "from_dataset", "from_texts", "run_identity"]
