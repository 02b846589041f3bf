"""SearchHit wire form: camelCase names, optional fields omitted, lossless round trip."""

from remy_retriever.schema.hits import BranchExplain, Citation, Match, SearchExplain, SearchHit


def _citation() -> Citation:
    return Citation(
        document_id="guide",
        chunk_index=2,
        start=10,
        end=42,
        heading_path=("Guide", "Install", "Linux"),
        title="Guide",
        url="https://example.org/guide",
    )


def test_minimal_hit_omits_optional_fields() -> None:
    hit = SearchHit(id="guide#2", score=0.5, text="Guide > Install\n\nx", citation=_citation())
    wire = hit.to_dict()
    assert set(wire) == {"id", "score", "text", "citation"}
    assert wire["citation"]["documentId"] == "guide"
    assert wire["citation"]["headingPath"] == ["Guide", "Install", "Linux"]
    assert SearchHit.from_dict(wire) == hit


def test_full_hit_round_trips() -> None:
    hit = SearchHit(
        id="guide#2",
        score=0.91,
        text="Guide > Install\n\ninstalling",
        citation=_citation(),
        retrieval_rank=4,
        retrieval_score=0.031,
        explain=SearchExplain(
            mode="hybrid",
            branches={
                "semantic": BranchExplain(rank=4, score=0.61, contribution=1 / 64),
                "lexical": BranchExplain(rank=2, score=7.5, contribution=1 / 62),
            },
            fused_score=0.031,
            rerank_score=0.91,
            matched_terms=("instal",),
        ),
        neighbors={"before": ("prev text",), "after": ()},
        matches=(Match(17, 27, "installing"),),
        metadata={"tenant": "a"},
    )
    wire = hit.to_dict()
    assert wire["retrievalRank"] == 4
    assert wire["retrievalScore"] == 0.031
    assert wire["explain"]["foundBy"] == ["lexical", "semantic"]
    assert wire["matches"] == [{"start": 17, "end": 27, "token": "installing"}]
    assert wire["neighbors"] == {"before": ["prev text"], "after": []}
    assert SearchHit.from_dict(wire) == hit


def test_the_mcp_tool_renders_a_citation_with_the_one_label() -> None:
    """``remy mcp``'s ``search`` tool prints ``Citation.label()``: title, new headings, then
    (source, pages). (The LangChain tool's label is checked against it in its own tests.)"""
    from remy_retriever.mcp_server.formatting import citation_label as mcp_label

    paged = Citation("guide", 0, 0, 5, ("Guide", "Install"), "Guide", path="g.pdf", page=3)
    assert paged.label() == "Guide > Install (g.pdf, p. 3)"
    bare = Citation("notes", 0, 0, 5)
    assert bare.label() == "notes (notes)"
    for citation in (paged, bare, _citation()):
        hit = SearchHit(id=f"{citation.document_id}#0", score=1.0, text="x", citation=citation)
        assert mcp_label(hit) == citation.label()
