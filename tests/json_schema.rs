//! A JSON Schema checker for the subset of keywords the project's schemas use
//! (specs/trace-*.schema.json): `type`, `properties`, `required`,
//! `additionalProperties` (a boolean or a schema), `items`, `minItems`, `enum`, `const`,
//! `minimum`, `oneOf`, `$ref` to `#/$defs/NAME`, and the annotations `$schema`, `$id`, `title`,
//! `description`, `$defs`. A schema with any other keyword is refused, so a schema can
//! never rely on a keyword this checker would silently ignore. (The `jsonschema` crate
//! would bring a regex engine, an HTTP client's types and dozens of crates for these
//! few keywords.)

use serde_json::Value;

const ANNOTATIONS: [&str; 5] = ["$schema", "$id", "title", "description", "$defs"];
const KEYWORDS: [&str; 11] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "enum",
    "const",
    "minimum",
    "oneOf",
    "$ref",
];

/// Every way `doc` breaks `schema`, as `path: what` lines; empty when it conforms.
pub fn check(schema: &Value, doc: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    at(schema, schema, doc, "$", &mut errors);
    errors
}

fn at(root: &Value, s: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(obj) = s.as_object() else {
        if s != &Value::Bool(true) {
            errors.push(format!("{path}: schema {s} is not an object"));
        }
        return;
    };
    for k in obj.keys() {
        if !KEYWORDS.contains(&k.as_str()) && !ANNOTATIONS.contains(&k.as_str()) {
            errors.push(format!("{path}: unsupported schema keyword `{k}`"));
        }
    }
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        match r
            .strip_prefix("#/$defs/")
            .and_then(|n| root.get("$defs")?.get(n))
        {
            Some(d) => at(root, d, v, path, errors),
            None => errors.push(format!("{path}: unresolved $ref {r}")),
        }
    }
    if let Some(t) = obj.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !types.iter().any(|t| is_type(v, t)) {
            errors.push(format!("{path}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(e) = obj.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errors.push(format!(
                "{path}: {v} is not one of {}",
                Value::Array(e.clone())
            ));
        }
    }
    if let Some(c) = obj.get("const") {
        if c != v {
            errors.push(format!("{path}: {v} is not {c}"));
        }
    }
    if let (Some(min), Some(x)) = (obj.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if x < min {
            errors.push(format!("{path}: {x} is below {min}"));
        }
    }
    if let Some(o) = v.as_object() {
        let props = obj.get("properties").and_then(Value::as_object);
        for r in obj
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(r) = r.as_str().filter(|r| !o.contains_key(*r)) {
                errors.push(format!("{path}: missing `{r}`"));
            }
        }
        for (k, x) in o {
            let sub = format!("{path}.{k}");
            match (
                props.and_then(|p| p.get(k)),
                obj.get("additionalProperties"),
            ) {
                (Some(ps), _) => at(root, ps, x, &sub, errors),
                (None, Some(Value::Bool(false))) => errors.push(format!("{sub}: not allowed")),
                (None, Some(extra)) => at(root, extra, x, &sub, errors),
                (None, None) => {}
            }
        }
    }
    if let (Some(min), Some(a)) = (obj.get("minItems").and_then(Value::as_u64), v.as_array()) {
        if (a.len() as u64) < min {
            errors.push(format!("{path}: {} items, fewer than {min}", a.len()));
        }
    }
    if let (Some(items), Some(a)) = (obj.get("items"), v.as_array()) {
        for (i, x) in a.iter().enumerate() {
            at(root, items, x, &format!("{path}[{i}]"), errors);
        }
    }
    if let Some(one) = obj.get("oneOf").and_then(Value::as_array) {
        let passing: Vec<Vec<String>> = one
            .iter()
            .map(|s| {
                let mut e = Vec::new();
                at(root, s, v, path, &mut e);
                e
            })
            .collect();
        let n = passing.iter().filter(|e| e.is_empty()).count();
        if n != 1 {
            errors.push(format!(
                "{path}: matches {n} of oneOf's {} schemas",
                one.len()
            ));
            if n == 0 {
                // The closest alternative's errors say most about what is wrong.
                if let Some(best) = passing.iter().min_by_key(|e| e.len()) {
                    errors.extend(best.iter().cloned());
                }
            }
        }
    }
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::check;
    use serde_json::json;

    #[test]
    fn the_subset_checks_what_it_claims() {
        let schema = json!({
            "$defs": { "n": { "type": "integer", "minimum": 0 } },
            "type": "object",
            "required": ["a"],
            "additionalProperties": false,
            "properties": {
                "a": { "type": "array", "minItems": 1, "items": { "$ref": "#/$defs/n" } },
                "b": { "oneOf": [ { "const": "x" }, { "enum": [1, 2] } ] }
            }
        });
        assert!(check(&schema, &json!({ "a": [0, 3], "b": 2 })).is_empty());
        let e = check(&schema, &json!({ "a": [-1, "s"], "b": 3, "c": 0 }));
        assert_eq!(e.len(), 5, "{e:#?}");
        assert!(check(&schema, &json!({}))
            .iter()
            .any(|e| e.contains("missing `a`")));
        assert!(check(&schema, &json!({ "a": [] }))[0].contains("fewer than 1"));
        assert!(check(&json!({ "pattern": "x" }), &json!("x"))[0].contains("unsupported"));
    }
}
