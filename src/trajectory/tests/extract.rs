//! Reading a recording step by step: what the steps of a whole recording share.

use std::sync::Arc;

use serde_json::json;

use super::{travel_tools, Rec, TRAVEL_SYSTEM};
use crate::neutral::ToolDef;
use crate::trajectory::extract::Steps;

fn flight(r: &mut Rec, to: &str) {
    r.turn(0, &format!("Fly me to {to}."))
        .calls(&[(
            "search_flights",
            json!({"to": to, "date": "2026-05-01"}),
            json!([]),
        )])
        .reply("No flights that day.");
}

#[test]
fn a_tool_offered_again_is_held_once_whatever_came_between() {
    let (mut travel, mut weather) = (Rec::travel(1), Rec::weather(1));
    flight(&mut travel, "LIS");
    weather
        .turn(0, "Weather in Paris?")
        .calls(&[(
            "get_weather",
            json!({"city": "Paris"}),
            json!({"temp_c": 18}),
        )])
        .reply("18°C in Paris.");
    // The same tools described otherwise are another definition.
    let mut tools = travel_tools();
    tools[0]["function"]["description"] = json!("Search flights, cheapest first.");
    let mut changed = Rec::new(1, TRAVEL_SYSTEM, tools);
    flight(&mut changed, "OPO");
    // Two agents' calls alternate, as concurrent conversations do: travel, weather,
    // travel, weather, then the changed travel agent's two.
    let interactions: Vec<_> = (travel.interactions.into_iter())
        .zip(weather.interactions)
        .flat_map(|(a, b)| [a, b])
        .chain(changed.interactions)
        .collect();
    let offered: Vec<Arc<[Arc<ToolDef>]>> = Steps::new(&interactions, None)
        .map(|(_, s)| s.call.expect("a model call").tools)
        .collect();
    let same = |a: &[Arc<ToolDef>], b: &[Arc<ToolDef>]| {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y))
    };
    assert_eq!(offered[0].len(), 3);
    assert!(
        same(&offered[0], &offered[2]),
        "travel, across a weather call"
    );
    assert!(
        same(&offered[1], &offered[3]),
        "weather, across a travel call"
    );
    assert!(
        !Arc::ptr_eq(&offered[0][0], &offered[4][0]),
        "a changed description"
    );
    assert_eq!(
        offered[4][0].definition["function"]["description"],
        "Search flights, cheapest first."
    );
    assert!(
        same(&offered[0][1..], &offered[4][1..]),
        "the unchanged tools"
    );
}
