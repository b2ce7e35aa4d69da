use zcode_contract::CredentialLookup;

use super::*;

const PLACEHOLDER: &str = "@@secret@@";

fn source() -> CredentialSource {
    CredentialSource {
        name: "plan-key".into(),
        file: ".zcode/v2/credentials.json".into(),
        key: "provider:{provider}:user:{uid}:key".into(),
        lookups: vec![CredentialLookup {
            name: "uid".into(),
            key: "profile:{family}".into(),
            field: "id".into(),
        }],
        encodings: vec![CredentialEncoding::Plain],
    }
}

fn write(args: &[(&str, &str)]) -> NativeWrite {
    let bytes = format!(r#"{{"id":"s-1","result":{{"apiKey":"{PLACEHOLDER}"}}}}"#).into_bytes();
    NativeWrite {
        bytes,
        label: "provider headers".into(),
        secret: Some(SecretFill {
            placeholder: PLACEHOLDER.into(),
            source: "plan-key".into(),
            args: args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            fallback: br#"{"id":"s-1","result":{"refused":true}}"#.to_vec(),
        }),
    }
}

fn home_with(credentials: &Value) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".zcode/v2")).unwrap();
    std::fs::write(home.path().join(".zcode/v2/credentials.json"), credentials.to_string())
        .unwrap();
    home
}

fn args() -> [(&'static str, &'static str); 2] {
    [("provider", "coding-plan:bigmodel"), ("family", "bigmodel")]
}

#[test]
fn fills_the_value_through_a_lookup_and_escapes_it_for_json() {
    let home = home_with(&serde_json::json!({
        "profile:bigmodel": "{\"id\":\"u42\"}",
        "provider:coding-plan:bigmodel:user:u42:key": "k\"ey\\1",
    }));
    let store = CredentialStore::new(home.path(), vec![source()]);
    let bytes = store.fill(&write(&args())).unwrap();
    let reply: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(reply["result"]["apiKey"], "k\"ey\\1");
}

#[test]
fn writes_the_fallback_when_the_credential_cannot_be_had() {
    let fallback = br#"{"id":"s-1","result":{"refused":true}}"#.to_vec();
    let missing_entry =
        home_with(&serde_json::json!({"profile:bigmodel": "{\"id\":\"u42\"}"}));
    let protected = home_with(&serde_json::json!({
        "profile:bigmodel": "{\"id\":\"u42\"}",
        "provider:coding-plan:bigmodel:user:u42:key": "enc:v1:aa.bb.cc",
    }));
    let no_file = tempfile::tempdir().unwrap();
    for home in [missing_entry.path(), protected.path(), no_file.path()] {
        let store = CredentialStore::new(home, vec![source()]);
        assert_eq!(store.fill(&write(&args())).unwrap(), fallback, "{}", home.display());
    }
    // A placeholder with no value is not a guess either.
    let store = CredentialStore::new(protected.path(), vec![source()]);
    assert_eq!(store.fill(&write(&[("family", "bigmodel")])).unwrap(), fallback);
}

#[test]
fn refuses_writes_the_mapper_got_wrong() {
    let store = CredentialStore::new("/nonexistent", vec![source()]);
    let mut unknown = write(&args());
    unknown.secret.as_mut().unwrap().source = "other".into();
    assert!(matches!(store.fill(&unknown), Err(FillError::UnknownSource { .. })));

    let mut twice = write(&args());
    twice.bytes.extend_from_slice(PLACEHOLDER.as_bytes());
    assert_eq!(
        store.fill(&twice),
        Err(FillError::Placeholder { label: "provider headers".into(), count: 2 })
    );
}

#[test]
fn passes_plain_writes_through_and_refuses_paths_outside_home() {
    let store = CredentialStore::new("/nonexistent", vec![]);
    let plain = NativeWrite::new("ack", b"{}\n".to_vec());
    assert_eq!(store.fill(&plain).unwrap(), b"{}\n");

    let home = home_with(&serde_json::json!({}));
    let mut escape = source();
    escape.file = "../etc/passwd".into();
    let store = CredentialStore::new(home.path(), vec![escape]);
    let fallback = write(&args()).secret.unwrap().fallback;
    assert_eq!(store.fill(&write(&args())).unwrap(), fallback);
}
