from botocore.exceptions import ClientError, EndpointConnectionError

from cluster_svc.adapters.aws import stage_error
from shared.errors import PermanentError, TemporaryError


def _client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": f"{code} happened"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        "CreateCluster",
    )


def test_throttling_and_5xx_are_temporary() -> None:
    for code, status in [
        ("ThrottlingException", 400),
        ("SlowDown", 503),
        ("InternalFailure", 500),
        ("Whatever", 502),
    ]:
        err = stage_error(_client_error(code, status))
        assert isinstance(err, TemporaryError), code
        assert err.code == code


def test_client_errors_are_permanent_with_aws_message() -> None:
    err = stage_error(_client_error("ValidationException", 400))
    assert isinstance(err, PermanentError)
    assert err.message == "ValidationException happened"


def test_unreachable_endpoint_is_temporary() -> None:
    err = stage_error(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"))
    assert isinstance(err, TemporaryError)
    assert err.code == "EndpointUnreachable"


def test_missing_credentials_fail_at_once_with_the_fix() -> None:
    from botocore.exceptions import NoCredentialsError

    err = stage_error(NoCredentialsError())
    assert isinstance(err, PermanentError) and err.code == "NoCredentials" and err.hint


def test_an_answer_that_cannot_be_read_is_not_called_unreachable() -> None:
    """A service that answered in a shape its model does not describe was reached: the error
    says the answer could not be read; a read timeout or a cut connection is unreachable."""
    from botocore.exceptions import ParamValidationError, ReadTimeoutError
    from botocore.parsers import ResponseParserError

    unreadable = stage_error(ResponseParserError("Unable to parse response (not XML)"))
    assert isinstance(unreadable, TemporaryError) and unreadable.code == "UnreadableResponse"
    assert "could not be read" in unreadable.message
    timeout = stage_error(ReadTimeoutError(endpoint_url="https://sagemaker.example"))
    assert isinstance(timeout, TemporaryError) and timeout.code == "EndpointUnreachable"
    invalid = stage_error(ParamValidationError(report="Invalid type for parameter InstanceCount"))
    assert isinstance(invalid, PermanentError) and invalid.code == "InvalidParameter"
