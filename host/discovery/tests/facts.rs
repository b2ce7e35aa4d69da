//! Install facts (WIT 0.4 `contract.facts`, `release.data-files`): what the core reads for a
//! mapper at verification time, and the contract checks that keep a fact from reaching a
//! secret.

mod support;

use support::{Fixture, contract};
use zcode_contract::{
    Contract, CredentialEncoding, CredentialSource, DataFile, FactKind, FactSource, FactValue,
    JsonFact, PresenceFact,
};
use zcode_discovery::{select, validate_contract};
use zcode_fake_install::Variant;

const TABLE: &str = "config/provider/zcode-builtin.json";

fn fact(name: &str, kind: FactKind) -> FactSource {
    FactSource { name: name.into(), kind }
}

fn json(file: &str, pointer: &str) -> JsonFact {
    JsonFact { file: file.into(), pointer: pointer.into() }
}

/// The test contract with the provider table as a data file of its desktop release, and
/// facts reading it.
fn with_table() -> Contract {
    let mut contract = contract();
    contract.releases[0]
        .data_files
        .push(DataFile { role: "provider-config".into(), path: TABLE.into() });
    contract.facts = vec![
        fact("table-revision", FactKind::InstallJson(json("provider-config", "/revision"))),
        fact("table-missing", FactKind::InstallJson(json("provider-config", "/no/such"))),
        fact("table-path", FactKind::InstallPath("provider-config".into())),
    ];
    contract
}

fn write_table(fixture: &Fixture, text: &str) -> String {
    let path = fixture.root.join("resources").join(TABLE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn install_facts_of_a_data_file_reach_the_verified_install() {
    let fixture = Fixture::new(Variant::Good);
    let path = write_table(&fixture, r#"{"revision": 31, "config": {}}"#);
    let contract = with_table();
    let selected = select(&fixture.inspect(&[("test:a", &contract)])).unwrap();
    let facts = &selected.install.facts;
    assert_eq!(
        facts,
        &vec![
            ("table-revision".to_string(), FactValue::Json("31".into())),
            ("table-missing".to_string(), FactValue::Json("null".into())),
            ("table-path".to_string(), FactValue::Json(serde_json::to_string(&path).unwrap())),
        ]
    );
    assert!(selected.install.files.contains(&("provider-config".to_string(), path)));
}

#[test]
fn a_data_file_that_is_missing_or_not_json_fails_verification() {
    let fixture = Fixture::new(Variant::Good);
    let contract = with_table();
    let missing = fixture.inspect(&[("test:a", &contract)]);
    let err = select(&missing).unwrap_err().to_string();
    assert!(err.contains(TABLE), "{err}");

    write_table(&fixture, "not json {");
    let broken = fixture.inspect(&[("test:a", &contract)]);
    let err = select(&broken).unwrap_err().to_string();
    assert!(err.contains("is not JSON"), "{err}");
}

#[test]
fn a_contract_may_read_a_data_file_of_a_release_that_pins_nothing_else() {
    let mut contract = with_table();
    // As the real Desktop releases: only the Agent entry is known, by its pin or identity.
    contract.releases[0].files.retain(|f| f.role == "cli");
    assert_eq!(validate_contract(&contract), Ok(()));
}

#[test]
fn a_fact_never_reads_a_credentials_file() {
    let mut contract = with_table();
    contract.facts.push(fact(
        "stolen",
        FactKind::UserJson(json(".zcode/v2/credentials.json", "/oauth:zai:access_token")),
    ));
    let err = validate_contract(&contract).unwrap_err();
    assert!(err.contains("holds credentials"), "{err}");

    let mut contract = with_table();
    contract.credential_sources.push(CredentialSource {
        name: "key".into(),
        file: ".zcode/v2/keys.json".into(),
        key: "k".into(),
        lookups: Vec::new(),
        encodings: vec![CredentialEncoding::Plain],
    });
    contract.facts.push(fact("stolen", FactKind::UserJson(json(".zcode/v2/keys.json", ""))));
    assert!(validate_contract(&contract).unwrap_err().contains("holds credentials"));
}

#[test]
fn a_fact_reads_only_files_of_the_hosts_own_folder() {
    // Another program's tokens in the home are JSON too.
    for elsewhere in
        [".docker/config.json", "setting.json", ".zcode/setting.json", ".zcode/v2/a/b.json"]
    {
        let mut contract = with_table();
        contract.facts.push(fact("x", FactKind::UserJson(json(elsewhere, ""))));
        let err = validate_contract(&contract).unwrap_err();
        assert!(err.contains("outside the host's own folder"), "{elsewhere}: {err}");
    }
    let mut contract = with_table();
    contract.facts.push(fact("x", FactKind::UserJson(json(".zcode/v2/setting.json", "/a"))));
    assert_eq!(validate_contract(&contract), Ok(()));
}

#[test]
fn facts_name_only_what_the_contract_declares() {
    let mut unknown_role = with_table();
    unknown_role.facts.push(fact("x", FactKind::InstallPath("nowhere".into())));
    assert!(validate_contract(&unknown_role).unwrap_err().contains("no release lists"));

    let mut unknown_source = with_table();
    unknown_source.facts.push(fact(
        "x",
        FactKind::CredentialPresence(PresenceFact { source: "nope".into(), args: Vec::new() }),
    ));
    assert!(validate_contract(&unknown_source).unwrap_err().contains("does not declare"));

    let mut twice = with_table();
    twice.facts.push(twice.facts[0].clone());
    assert!(validate_contract(&twice).unwrap_err().contains("twice"));

    let mut escaping = with_table();
    escaping.facts.push(fact("x", FactKind::UserJson(json("../etc/passwd", ""))));
    assert!(validate_contract(&escaping).is_err());

    let mut data_twice = with_table();
    data_twice.releases[0]
        .data_files
        .push(DataFile { role: "cli".into(), path: "other.json".into() });
    assert!(validate_contract(&data_twice).unwrap_err().contains("twice"));
}
