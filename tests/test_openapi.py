"""GET /api/v1/openapi.json documents every endpoint and every status code it answers with."""

import pytest


@pytest.fixture
def document(client, db):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


EXPECTED = {
    ("/api/v1/runs", "post"): {"200", "201", "401", "403", "409", "413", "415", "422"},
    ("/api/v1/sources", "get"): {"200", "401", "422"},
    ("/api/v1/sources/{slug}", "get"): {"200", "401", "404"},
    ("/api/v1/sources/{slug}/runs", "get"): {"200", "401", "404", "422"},
    ("/api/v1/sources/{slug}/pause", "post"): {"200", "401", "404", "415", "422"},
    ("/api/v1/sources/{slug}/settings", "patch"): {"200", "401", "403", "404", "415", "422"},
    ("/api/v1/sources/{slug}/acknowledge", "post"): {"200", "401", "404", "409", "415", "422"},
    ("/api/v1/windows", "post"): {"201", "401", "403", "415", "422"},
    ("/api/v1/sources/{slug}/resume", "post"): {"200", "401", "404"},
}


@pytest.mark.parametrize("path,method", EXPECTED, ids=[f"{m} {p}" for p, m in EXPECTED])
def test_every_endpoint_and_status_is_documented(document, path, method):
    operation = document["paths"][path][method]
    assert EXPECTED[(path, method)] <= set(operation["responses"])
    assert operation.get("security"), "every endpoint needs auth"


def test_the_endpoints_that_need_may_configure_say_so_at_their_403(document):
    for path, method in [("/api/v1/sources/{slug}/settings", "patch"), ("/api/v1/windows", "post")]:
        operation = document["paths"][path][method]
        assert "may_configure" in operation["responses"]["403"]["description"], f"{method} {path}"
        assert "--may-configure" in operation["description"], f"{method} {path}"
    assert "may_configure" in document["components"]["securitySchemes"]["TokenAuth"]["description"]
    # Still one bearer scheme: a client enters its token once.
    assert {
        name for name, scheme in document["components"]["securitySchemes"].items() if scheme.get("scheme") == "bearer"
    } == {"TokenAuth"}


def test_only_operations_that_take_a_body_list_unsupported_media_type(document):
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert ("415" in operation["responses"]) == ("requestBody" in operation), f"{method} {path}"


def test_only_paths_that_name_something_list_not_found(document):
    # A client generated from the document handles every status it lists: a 404 that no request
    # of POST /runs or POST /windows can get is a branch nobody can test.
    for path, method in [("/api/v1/runs", "post"), ("/api/v1/windows", "post"), ("/api/v1/sources", "get")]:
        assert "404" not in document["paths"][path][method]["responses"], f"{method} {path}"
    for path, operations in document["paths"].items():
        if "{slug}" in path:
            for method, operation in operations.items():
                assert "404" in operation["responses"], f"{method} {path}"


def test_the_run_report_body_is_documented_with_the_spec_fields(document):
    body = document["paths"]["/api/v1/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/RunReport"}
    schemas = document["components"]["schemas"]
    report = schemas["RunReport"]
    assert set(report["required"]) == {"source", "run_id", "started_at", "finished_at", "collected"}
    for field in [
        "declared_total",
        "removed",
        "pages",
        "failed_batches",
        "delivery",
        "snapshot",
        "failure_window",
        "proxy_transitions",
        "pacing",
        "outcomes",
        "counters",
        "meta",
    ]:
        assert field in report["properties"], field
    assert {"from", "to", "reason", "stage"} <= set(schemas["ProxyTransition"]["properties"])
    # A meta value is a string of up to 1,000 characters or a number, as docs/api.md says (it read as
    # any value: a generated client sent objects and booleans, each refused with 422).
    # Every field of the answer is in each answer, ignored_fields included (docs/api.md, The response).
    assert set(schemas["VerdictOut"]["required"]) == set(schemas["VerdictOut"]["properties"])
    [meta_value] = report["properties"]["meta"]["patternProperties"].values()
    assert meta_value == {"anyOf": [{"type": "string", "maxLength": 1000}, {"type": "number"}]}
    # A client generated from the document carries what each field means, not only its type.
    undescribed = [name for name, field in report["properties"].items() if not field.get("description")]
    assert undescribed == []
    # Every $ref resolves inside the document.
    refs = _refs(document)
    assert refs and all(ref.removeprefix("#/components/schemas/") in schemas for ref in refs)


def test_the_operation_ids_are_those_clients_were_generated_from(document):
    """ninja derives an id from the function's module; the endpoints moved, the ids did not."""
    ids = {
        (path, method): operation["operationId"]
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }
    assert ids == {
        ("/api/v1/runs", "post"): "sources_api_post_run",
        ("/api/v1/sources", "get"): "sources_api_list_sources",
        ("/api/v1/sources/{slug}", "get"): "sources_api_get_source",
        ("/api/v1/sources/{slug}/acknowledge", "post"): "sources_api_acknowledge",
        ("/api/v1/sources/{slug}/pause", "post"): "sources_api_pause",
        ("/api/v1/sources/{slug}/resume", "post"): "sources_api_resume",
        ("/api/v1/sources/{slug}/runs", "get"): "sources_api_list_runs",
        ("/api/v1/sources/{slug}/runs/{run_id}", "get"): "sources_api_get_run",
        ("/api/v1/sources/{slug}/settings", "patch"): "sources_api_change_settings",
        ("/api/v1/sources/{slug}/windows", "get"): "sources_api_source_windows",
        ("/api/v1/windows", "post"): "sources_api_create_window",
    }


def _refs(value):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref":
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def test_the_api_docs_page_works_offline(client, db):
    page = client.get("/api/v1/docs")
    assert page.status_code == 200
    assert b"cdn." not in page.content and b"/static/ninja/swagger-ui-bundle.js" in page.content
    assert client.get("/static/ninja/swagger-ui-bundle.js").status_code == 200
