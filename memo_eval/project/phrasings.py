"""What the people in the generated conversations say: phrasings for tuning and for reporting.

``PHRASINGS["dev"]`` … ``["dev4"]`` are for tuning summarizers; ``PHRASINGS["heldout"]`` and
``["heldout2"]`` are only for reporting (``bench/memo_quality.py``, ``eval_memos --split
heldout``). All sets state the same events with the same slots, but in different words,
sentence shapes and fact order, so a summarizer tuned to the dev wordings is measured on
wording it has not seen. The held-out sets have their own filler (small talk, long policy
answers); the dev sets share theirs. "heldout2" was written after the embedded summarizer's
reader was frozen.

Slots in braces are filled by ``memo_eval.project.generator``: case slots (``{order}``,
``{total}``, ``{eta}`` …, whose first statement plants a fact) and flavour slots that plant
nothing (``{product}``, ``{carrier}``, ``{first}``, ``{days}``, ``{threshold}`` …).
"""

from __future__ import annotations

from dataclasses import dataclass

Templates = dict[str, list[str]]

DEV_EVENTS: Templates = {
    # --- the customer ------------------------------------------------------------------------
    "intro": [
        "Hi there, my name is {name} and my customer number is {customer_no}. You can reach me "
        "at {email} if anything needs to go in writing. I have a few things going on with your "
        "shop at the moment, so bear with me while I go through them.",
        "Hello! {name} here, customer number {customer_no}, email {email}. I've got a couple of "
        "questions and I suspect this will take a while, sorry in advance.",
    ],
    "intro_ack": [
        "Hi {first}, thanks for getting in touch. I have your account {customer_no} open in "
        "front of me, so tell me what you need and we'll go through it one thing at a time.",
        "Welcome back {first}! Your customer file is open on my screen. Take your time and "
        "let me know what's going on.",
    ],
    "phone": [
        "By the way, if it's easier, call me on {phone}. I'm usually free after lunch.",
        "Quick thing before I forget: my phone number is {phone}, in case the courier needs it.",
    ],
    "phone_ack": [
        "Noted, I've added {phone} to your profile so our couriers and technicians can reach you.",
        "Thanks, the number {phone} is saved on your account now.",
    ],
    # --- an order that goes missing ----------------------------------------------------------
    "order_problem": [
        "Next thing: I ordered a new {product} on {ordered}, order {order}, and paid {total}. The "
        "confirmation said it would ship soon but I haven't seen anything since.",
        "I placed order {order} for a new {product} on {ordered} ({total} in total) and I'm "
        "wondering where it is.",
    ],
    "order_shipped": [
        "I can see order {order}: it left our warehouse and went out with {carrier}. The "
        "tracking number is {tracking} and the estimated delivery date is {eta}.",
        "Order {order} was handed over to {carrier} with tracking number {tracking}. {carrier} "
        "currently estimates delivery on {eta}.",
    ],
    "order_late": [
        "The tracking for {order} hasn't moved in days. It still says the parcel is at the "
        "depot and I'm starting to worry.",
        "It's past the estimated date and the {product} still isn't here. The tracking shows "
        "no movement at all for order {order}.",
    ],
    "carrier_ticket": [
        "I'm sorry about the delay. I've opened an investigation with {carrier} for order "
        "{order}, reference ticket {ticket}. They normally reply within two working days.",
        "That's not acceptable, so I've raised ticket {ticket} with {carrier} about order "
        "{order}; they will trace the parcel.",
    ],
    "order_ping": [
        "Any news on {order}? It's been a while.",
        "Just checking in on order {order}. Has {carrier} said anything yet?",
    ],
    "eta_update": [
        "Update on order {order}: {carrier} found the parcel at a sorting centre and gave a "
        "new delivery date of {eta2}. The ticket {ticket} stays open until it is delivered.",
        "{carrier} answered on ticket {ticket}: the parcel for order {order} was mis-sorted "
        "and is now expected on {eta2}.",
    ],
    "order_arrived": [
        "Good news: the {product} from order {order} arrived this morning, all in one piece.",
        "The parcel for order {order} was finally delivered today. Thanks for chasing it.",
    ],
    "order_closed": [
        "Glad to hear it! I've closed ticket {ticket} with {carrier} and marked order {order} "
        "as delivered.",
        "Great news. Order {order} is complete and ticket {ticket} is closed on our side.",
    ],
    "order_lost": [
        "{carrier} has confirmed that the parcel for order {order} is lost. I can either refund "
        "the {total} or send a replacement. Which would you prefer?",
        "I'm afraid {carrier} closed ticket {ticket} as lost: order {order} will not arrive. "
        "Would you like a refund or a replacement?",
    ],
    "choose_refund": [
        "Please just refund it, I'll buy it somewhere else.",
        "A refund, please. I've lost patience with this one.",
    ],
    "order_refunded": [
        "Done: refund {refund_ref} of {refund} for order {order} was issued on {refunded_on}. "
        "It should reach your card within 5 to 7 working days.",
        "I've issued refund {refund_ref} for order {order}: {refund}, processed on "
        "{refunded_on}. The order is closed.",
    ],
    "choose_replacement": [
        "A replacement please, I still need the {product}.",
        "Send a new one, please. I really do need it.",
    ],
    "replacement_shipped": [
        "I've created replacement order {new_order} for you at no charge. It shipped with "
        "{carrier}, tracking {new_tracking}, and is due on {new_eta}.",
        "The replacement is on its way: order {new_order}, {carrier} tracking {new_tracking}, "
        "expected on {new_eta}.",
    ],
    "replacement_arrived": [
        "The replacement {new_order} arrived yesterday, thanks for sorting it out.",
        "Got the new {product} (order {new_order}) today. All good.",
    ],
    "replacement_closed": [
        "Perfect, I've closed order {order} and the replacement {new_order}.",
        "Wonderful. Both order {order} and replacement {new_order} are closed now.",
    ],
    # --- a return with a refund --------------------------------------------------------------
    "return_request": [
        "I'd like to return the {product} from order {order}. I bought it on {bought} for "
        "{paid} and it just doesn't work in the room.",
        "Can I send back the {product}? It's order {order}, bought on {bought}, {paid}.",
    ],
    "return_authorised": [
        "No problem. I've authorised the return under {rma}; the prepaid label is in your "
        "inbox. Once the warehouse receives it we refund {refund}, which is the price minus the "
        "restocking fee.",
        "Return approved with authorisation number {rma}. After the warehouse checks it in "
        "you'll get {refund} back.",
    ],
    "return_sent": [
        "I dropped the {product} off at the post office today with your label.",
        "The return parcel is on its way back to you.",
    ],
    "return_refunded": [
        "The warehouse has checked in return {rma}, and refund {refund_ref} of {refund} for "
        "order {order} was processed on {refunded_on}.",
        "Your return {rma} arrived. I've refunded {refund} for order {order} on {refunded_on}, "
        "reference {refund_ref}. That closes the return.",
    ],
    "return_ping": [
        "Has the return for order {order} arrived yet?",
        "Any word on my return {rma}?",
    ],
    # --- a faulty device ---------------------------------------------------------------------
    "device_problem": [
        "My {product} keeps showing error {error} when I switch it on. The serial number on the "
        "back is {serial}.",
        "Different topic: the {product} has stopped working, it shows error {error}. Serial "
        "number {serial}.",
    ],
    "ticket_opened": [
        "Thanks, I've logged this as ticket {ticket} for the {product} with serial {serial}. "
        "Our technical team will look at it.",
        "I've opened support ticket {ticket} for serial number {serial}. Could you try a reset "
        "in the meantime?",
    ],
    "ticket_ping": [
        "Any progress on ticket {ticket}? The {product} is still unusable.",
        "Sorry to nag, but ticket {ticket} hasn't moved and I need the {product}.",
    ],
    "visit_booked": [
        "I've escalated ticket {ticket} to our field team. A technician will visit on {visit}, "
        "booking reference {booking}.",
        "Ticket {ticket} is escalated to second-line support, and we've booked a technician "
        "visit for {visit}. Your booking reference is {booking}.",
    ],
    "visit_done": [
        "The technician came and replaced the board, the {product} works now.",
        "The visit went well and the {product} is running again.",
    ],
    "ticket_resolved": [
        "Great, I'm marking ticket {ticket} as resolved.",
        "Thanks for confirming. Ticket {ticket} is now closed as resolved.",
    ],
    # --- a wrong invoice ---------------------------------------------------------------------
    "invoice_wrong": [
        "Invoice {invoice} charges me {billed}, but my plan is {correct} a month. Can you check?",
        "I think invoice {invoice} is wrong: it says {billed} and I expected {correct}.",
    ],
    "invoice_review": [
        "I'm checking invoice {invoice} with our billing team now; I'll come back to you.",
        "Thanks for flagging it. I've disputed invoice {invoice} internally and billing is "
        "reviewing it.",
    ],
    "invoice_corrected": [
        "You were right, that was our error. I've issued credit note {credit_note} for {credit} "
        "against invoice {invoice}, and the due date moves to {due}.",
        "Billing agreed: credit note {credit_note} of {credit} corrects invoice {invoice}. The "
        "new due date is {due}.",
    ],
    "invoice_ping": [
        "Did billing get back to you about invoice {invoice}?",
        "What's the status of invoice {invoice}?",
    ],
    "invoice_paid": [
        "I've paid the corrected amount on invoice {invoice} this morning.",
        "Invoice {invoice} is paid now.",
    ],
    "invoice_closed": [
        "Payment received, invoice {invoice} is now paid in full. Thanks!",
        "Thanks, I can see invoice {invoice} as paid, so that's closed.",
    ],
    # --- a warranty claim that runs for months -----------------------------------------------
    "claim_open": [
        "One more thing, and it's the big one: the {product} I bought on {bought} for {price} "
        "has stopped working. The serial number is {serial}. It should still be under "
        "warranty.",
        "My {product} broke down. I bought it on {bought}, paid {price}, serial number "
        "{serial}. Can I claim this under the warranty?",
    ],
    "claim_registered": [
        "I've registered warranty claim {claim} for the {product}, serial {serial}. The repair "
        "centre will assess it.",
        "Yes, it's covered. Warranty claim {claim} is open for serial number {serial}.",
    ],
    "claim_ping": [
        "What's happening with claim {claim}? It's been weeks.",
        "Any update on my warranty claim {claim}?",
    ],
    "claim_parts": [
        "Update on claim {claim}: the repair centre needs a replacement motor, which is on "
        "back-order until {parts_eta}.",
        "The repair centre diagnosed claim {claim}: they are waiting for a spare part, expected "
        "on {parts_eta}.",
    ],
    "claim_parts_delay": [
        "Sorry, the part for claim {claim} slipped again; the supplier now says {parts_eta2}.",
        "Bad news on claim {claim}: the spare part is delayed until {parts_eta2}.",
    ],
    "claim_repair": [
        "The part for claim {claim} has arrived. The repair is scheduled for {repair}.",
        "Claim {claim} is moving: the repair is booked for {repair}.",
    ],
    "claim_nothing_new": [
        "Nothing new on claim {claim} yet, I'm afraid; the repair centre is still waiting. I'll "
        "let you know the moment that changes.",
        "I checked claim {claim} again this morning and there is no change since my last message.",
    ],
    # --- a subscription change ---------------------------------------------------------------
    "plan_change": [
        "Can you switch my subscription to the {plan} plan?",
        "I'd like to change my plan to {plan}, please.",
    ],
    "plan_changed": [
        "Done. Subscription {subscription} is now on the {plan} plan at {price} per month, "
        "starting {starts}.",
        "I've switched subscription {subscription} to {plan}: {price} a month from {starts}.",
    ],
}

HELDOUT_EVENTS: Templates = {
    "intro": [
        "Good morning. This is {name}; the account is registered under {email} and the "
        "customer number should be {customer_no}. I'll try to keep things organised.",
        "Hey, {name} writing. Customer no. {customer_no}. Best address for me is {email}. "
        "There's a list, so let's get started.",
    ],
    "intro_ack": [
        "Welcome, {first}. I've pulled up customer record {customer_no}. What shall we start with?",
        "Good to hear from you, {first}. Your details are in front of me; go ahead.",
    ],
    "phone": [
        "My mobile is {phone} in case a driver needs to reach me.",
        "Add {phone} as my contact number please, email is slow for me these days.",
    ],
    "phone_ack": [
        "Thanks, {phone} is saved as your contact number now.",
        "Got it, {phone} is on file.",
    ],
    "order_problem": [
        "Another issue: my {product} (order {order}, bought {ordered} for {total}) hasn't "
        "turned up.",
        "Could you look into {order}? It's the {product} I paid {total} for back on {ordered}.",
    ],
    "order_shipped": [
        "Your {product} is with {carrier} under tracking {tracking}; they expect to deliver it "
        "by {eta}.",
        "Good news on {order}: it is in transit with {carrier}. Use {tracking} on their site; "
        "expected arrival {eta}.",
    ],
    "order_late": [
        "Still nothing for {order}. The carrier page is frozen on the same scan.",
        "The estimate came and went and there's no parcel. What now?",
    ],
    "carrier_ticket": [
        "Apologies. A trace request is now running with {carrier}; our case number for it is "
        "{ticket}, linked to {order}.",
        "Understood. {ticket} is the case for the {carrier} investigation on {order}.",
    ],
    "order_ping": [
        "Is there an update for {order}?",
        "Following up about {order}. Anything from the courier?",
    ],
    "eta_update": [
        "{carrier} replied on {ticket}: the parcel turned up at their hub and is now due {eta2}.",
        "Revised estimate for {order}: {eta2}, according to {carrier}.",
    ],
    "order_arrived": [
        "Finally, {order} was delivered today. Thanks.",
        "It's here! The {product} came this afternoon.",
    ],
    "order_closed": [
        "Great. {order} is complete on our side and {ticket} is closed.",
        "Happy ending then; I've shut {ticket} and {order} is done.",
    ],
    "order_lost": [
        "Bad news: {carrier} declared {order} lost in transit. Refund or replacement, your choice.",
        "The courier gave up on {order}; the parcel is gone. Shall I reimburse you or resend?",
    ],
    "choose_refund": [
        "I'd rather have my money back.",
        "Money back, please.",
    ],
    "order_refunded": [
        "I've processed {refund} back to your card for {order} (reference {refund_ref}, "
        "{refunded_on}).",
        "Reimbursement {refund_ref} went out on {refunded_on}: {refund} for {order}. Closing it.",
    ],
    "choose_replacement": [
        "Send another one, please.",
        "Resend it, I still want the {product}.",
    ],
    "replacement_shipped": [
        "Replacement {new_order} is on its way: {carrier} tracking {new_tracking}, expected "
        "{new_eta}.",
        "We've dispatched {new_order} free of charge; {carrier} number {new_tracking}, due "
        "{new_eta}.",
    ],
    "replacement_arrived": [
        "Got the new one ({new_order}) today.",
        "{new_order} landed this morning, everything's fine.",
    ],
    "replacement_closed": [
        "Good to hear; both {order} and {new_order} are now closed.",
        "Excellent, I'm wrapping up {order} and {new_order}.",
    ],
    "return_request": [
        "The {product} (order {order}, {paid}, delivered around {bought}) has to go back; it "
        "doesn't fit.",
        "I want to send {order} back. Paid {paid} on {bought}, never used it.",
    ],
    "return_authorised": [
        "Return approved: {rma}. Drop it at any post office with the label we emailed; {refund} "
        "comes back once it's checked in.",
        "Fine by us. {rma} is your return authorisation, and you'll receive {refund} after "
        "inspection.",
    ],
    "return_sent": [
        "Parcel's gone back to you.",
        "Shipped it back this morning.",
    ],
    "return_refunded": [
        "All done: {refund} refunded on {refunded_on} for {order}, reference {refund_ref}.",
        "{rma} was checked in; reimbursement {refund_ref} ({refund}, {refunded_on}) settles "
        "{order}.",
    ],
    "return_ping": [
        "Has {rma} been received?",
        "Where are we with returning {order}?",
    ],
    "device_problem": [
        "The {product} is dead again, error {error}. Serial is {serial}.",
        "Help: {product}, serial {serial}, won't boot and flashes {error}.",
    ],
    "ticket_opened": [
        "Support case {ticket} is open for device {serial}.",
        "Logged under {ticket} for unit {serial}; a technician will review the fault.",
    ],
    "ticket_ping": [
        "{ticket}: still broken here.",
        "Is anybody working on {ticket}?",
    ],
    "visit_booked": [
        "Level-two support took {ticket}; a technician is booked for {visit} (booking {booking}).",
        "We're sending someone: {visit}, appointment reference {booking}, for {ticket}.",
    ],
    "visit_done": [
        "Repair done, all working.",
        "Your engineer fixed it, thanks.",
    ],
    "ticket_resolved": [
        "Closing {ticket} as fixed then.",
        "{ticket} is solved; I've archived it.",
    ],
    "invoice_wrong": [
        "You billed {billed} on {invoice}; I'm on the {correct} plan.",
        "{invoice} looks off to me: {billed} instead of {correct}.",
    ],
    "invoice_review": [
        "Billing is looking into {invoice}.",
        "I've queried {invoice} with accounts and will report back.",
    ],
    "invoice_corrected": [
        "Correction made: credit note {credit_note} ({credit}) offsets {invoice}; please pay "
        "by {due}.",
        "{invoice} was overcharged. {credit_note} credits you {credit}, payment due {due}.",
    ],
    "invoice_ping": [
        "Any news about {invoice}?",
        "Has accounts answered on {invoice}?",
    ],
    "invoice_paid": [
        "Settled {invoice} today.",
        "Transferred the money for {invoice}.",
    ],
    "invoice_closed": [
        "Thanks, {invoice} shows as settled.",
        "Received; {invoice} is cleared.",
    ],
    "claim_open": [
        "My {product} (serial {serial}) failed. Purchased {bought}, {price}. Warranty please.",
        "The {product} packed up. Receipt says {bought} and {price}; serial {serial}.",
    ],
    "claim_registered": [
        "Claim {claim} is in our system for serial {serial}.",
        "Warranty case {claim} created for unit {serial}; the service centre will inspect it.",
    ],
    "claim_ping": [
        "Status of {claim}, please?",
        "Where is {claim} at?",
    ],
    "claim_parts": [
        "{claim}: waiting for a part; the supplier says {parts_eta}.",
        "The service centre ordered a component for {claim}, arriving {parts_eta}.",
    ],
    "claim_parts_delay": [
        "New part date for {claim}: {parts_eta2}.",
        "{claim} slipped; component now expected {parts_eta2}.",
    ],
    "claim_repair": [
        "{claim}: repair booked for {repair}.",
        "Parts are in for {claim}; the fix happens on {repair}.",
    ],
    "claim_nothing_new": [
        "No movement on {claim} yet.",
        "{claim} is unchanged; still with the service centre.",
    ],
    "plan_change": [
        "I want the {plan} tier instead.",
        "Move me to {plan}, please.",
    ],
    "plan_changed": [
        "{subscription} moved to {plan}: {price}/month from {starts}.",
        "Your {plan} tier is live on {subscription}, billed {price} monthly from {starts}.",
    ],
}

# A second tuning set in other words again (terse, facts before ids, pronouns), so that tuning
# on "dev" and "dev2" together rewards reading in general rather than one wording.
DEV2_EVENTS: Templates = {
    "intro": [
        "Hi, {name}. Email on file: {email}. Customer number {customer_no}. I need help with "
        "several things.",
        "Morning! I'm {name}, you'll find me under customer number {customer_no} (or {email}).",
    ],
    "intro_ack": [
        "Hello {first}, I'm here. Account {customer_no} is open on my side.",
        "Thanks {first}. Go ahead whenever you're ready.",
    ],
    "phone": [
        "You can also text me at {phone}.",
        "For the courier: {phone}.",
    ],
    "phone_ack": [
        "Saved {phone} as your phone number.",
        "Done, we'll use {phone} for calls and texts.",
    ],
    "order_problem": [
        "On {ordered} I paid {total} for a {product}. Order number {order}. Nothing has arrived.",
        "Where's my {product}? {order}, placed {ordered}, {total}.",
    ],
    "order_shipped": [
        "{order} shipped with {carrier}; tracking number {tracking}. Expected on {eta}.",
        "It's on the road: {carrier}, tracking {tracking}, estimated arrival {eta}.",
    ],
    "order_late": [
        "Nothing has moved on the tracking of {order} for days.",
        "The parcel seems stuck. Can you chase it?",
    ],
    "carrier_ticket": [
        "I've asked {carrier} to investigate order {order} (ticket {ticket}).",
        "Investigation opened with {carrier}, ticket {ticket}, for your order {order}.",
    ],
    "order_ping": [
        "Any update on my order {order}?",
        "Order {order}: news?",
    ],
    "eta_update": [
        "{carrier} located the parcel for {order}. New delivery date: {eta2}.",
        "The parcel for order {order} was found at a depot; delivery now expected {eta2}.",
    ],
    "order_arrived": [
        "It finally came today, order {order} is here.",
        "Delivered at last! Thanks for chasing {carrier}.",
    ],
    "order_closed": [
        "Glad it arrived. Closing order {order} and ticket {ticket}.",
        "Good. I've marked order {order} as delivered.",
    ],
    "order_lost": [
        "Unfortunately {carrier} reports order {order} as lost. Refund of {total}, or a "
        "replacement?",
        "Order {order} is lost in transit, {carrier} confirmed. Shall we refund or replace it?",
    ],
    "choose_refund": [
        "Refund, please.",
        "I'll take the refund.",
    ],
    "order_refunded": [
        "Refund of {refund} for order {order} issued on {refunded_on}; reference {refund_ref}.",
        "{refund} has been refunded for order {order} ({refund_ref}, {refunded_on}).",
    ],
    "choose_replacement": [
        "Replacement, please.",
        "Please send a replacement.",
    ],
    "replacement_shipped": [
        "Replacement order {new_order} shipped with {carrier}: tracking {new_tracking}, "
        "expected {new_eta}.",
        "We sent a replacement, order {new_order}. {carrier} tracking number {new_tracking}; "
        "it should arrive on {new_eta}.",
    ],
    "replacement_arrived": [
        "The replacement arrived, all good.",
        "Replacement {new_order} delivered today.",
    ],
    "replacement_closed": [
        "Great, I've closed order {order}.",
        "Closing order {order} and replacement order {new_order} then.",
    ],
    "return_request": [
        "I want to return order {order}, the {product}. Paid {paid} on {bought}.",
        "Return request: {product}, order number {order}, {paid}, delivered {bought}.",
    ],
    "return_authorised": [
        "Return authorised, RMA {rma}. You'll be refunded {refund} once we receive it.",
        "Your return authorisation is {rma}; expect {refund} back after inspection.",
    ],
    "return_sent": [
        "Sent it back today.",
        "The {product} is on its way back to you.",
    ],
    "return_refunded": [
        "Return {rma} received. Refund {refund_ref}: {refund} for order {order}, issued "
        "{refunded_on}.",
        "We've refunded {refund} for order {order} on {refunded_on} (reference {refund_ref}).",
    ],
    "return_ping": [
        "Did you get my return for order {order}?",
        "Return {rma}: any news?",
    ],
    "device_problem": [
        "Error {error} on my {product} again. Serial number {serial}.",
        "The {product} won't start, it just shows {error}. Its serial is {serial}.",
    ],
    "ticket_opened": [
        "Ticket {ticket} opened for serial {serial}.",
        "I opened ticket {ticket}; the device with serial number {serial} is linked to it.",
    ],
    "ticket_ping": [
        "Ticket {ticket}: any progress?",
        "Still waiting on ticket {ticket}.",
    ],
    "visit_booked": [
        "Ticket {ticket} escalated: technician visit on {visit}, booking reference {booking}.",
        "A technician will come on {visit} for ticket {ticket}. Booking {booking}.",
    ],
    "visit_done": [
        "Technician came, it works again.",
        "All fixed after the visit.",
    ],
    "ticket_resolved": [
        "Ticket {ticket} resolved.",
        "Marking ticket {ticket} as resolved, glad it works.",
    ],
    "invoice_wrong": [
        "Invoice {invoice}: billed {billed}, should be {correct}.",
        "There's a mistake on invoice {invoice}. It says {billed}; my plan costs {correct}.",
    ],
    "invoice_review": [
        "Invoice {invoice} is under review with billing.",
        "I've raised invoice {invoice} with billing for review.",
    ],
    "invoice_corrected": [
        "Invoice {invoice} corrected: credit note {credit_note} for {credit}; due {due}.",
        "Billing issued credit note {credit_note} ({credit}) for invoice {invoice}; it's "
        "now due on {due}.",
    ],
    "invoice_ping": [
        "Invoice {invoice}: any update?",
        "Is invoice {invoice} sorted yet?",
    ],
    "invoice_paid": [
        "Paid invoice {invoice}.",
        "I've settled invoice {invoice}.",
    ],
    "invoice_closed": [
        "Invoice {invoice} is paid, thank you.",
        "Payment for invoice {invoice} received.",
    ],
    "claim_open": [
        "Warranty question: {product}, serial number {serial}, purchased {bought} for {price}. "
        "It broke.",
        "My {product} stopped working. I paid {price} on {bought}; the serial number is {serial}.",
    ],
    "claim_registered": [
        "Warranty claim {claim} registered for serial {serial}.",
        "I registered claim {claim} for the {product} (serial {serial}).",
    ],
    "claim_ping": [
        "Claim {claim}: any news?",
        "How is my claim {claim} going?",
    ],
    "claim_parts": [
        "Claim {claim}: the spare part is expected on {parts_eta}.",
        "For claim {claim} we're waiting for a part; it should arrive on {parts_eta}.",
    ],
    "claim_parts_delay": [
        "Claim {claim}: the part is delayed to {parts_eta2}.",
        "The supplier moved the part for claim {claim} to {parts_eta2}.",
    ],
    "claim_repair": [
        "Claim {claim}: repair scheduled for {repair}.",
        "The repair for claim {claim} is booked on {repair}.",
    ],
    "claim_nothing_new": [
        "No news on claim {claim} yet.",
        "Claim {claim} is still with the repair centre.",
    ],
    "plan_change": [
        "Please change me to {plan}.",
        "Switch to the {plan} plan, please.",
    ],
    "plan_changed": [
        "Subscription {subscription} switched to {plan}, {price} a month, from {starts}.",
        "Your subscription {subscription} is now {plan} at {price} monthly, effective {starts}.",
    ],
}

# A third tuning set: structured agent replies (one fact per line), identifiers first, casual
# users, other verbs for the same events.
DEV3_EVENTS: Templates = {
    "intro": [
        "hey there, {name} (cust. no. {customer_no}), reach me via {email} pls",
        "Hello,\nName: {name}\nCustomer number: {customer_no}\nEmail: {email}",
    ],
    "intro_ack": [
        "Hi {first}! Found your account ({customer_no}). What's up?",
        "Thanks {first}, got your details.",
    ],
    "phone": [
        "phone's {phone} btw",
        "Phone: {phone}",
    ],
    "phone_ack": [
        "Phone number updated to {phone}.",
        "{phone} added to your account.",
    ],
    "order_problem": [
        "so the {product} ({order}) still hasn't shown up?? paid {total} on {ordered}",
        "Order: {order}\nItem: {product}\nDate: {ordered}\nAmount: {total}\nIt has not been "
        "delivered.",
    ],
    "order_shipped": [
        "Here's what I have for it:\n- Order: {order}\n- Carrier: {carrier}\n- Tracking: "
        "{tracking}\n- ETA: {eta}",
        "{order} has been dispatched via {carrier} ({tracking}), ETA {eta}.",
    ],
    "order_late": [
        "{order} still not here, tracking hasn't updated since",
        "Still waiting for {order}. The tracking page shows the same status for a week.",
    ],
    "carrier_ticket": [
        "Carrier investigation:\n- Order: {order}\n- Carrier: {carrier}\n- Ticket: {ticket}",
        "{ticket}: trace request sent to {carrier} for {order}.",
    ],
    "order_ping": [
        "{order}??",
        "Any luck with {order}?",
    ],
    "eta_update": [
        "{order}: {carrier} has rerouted the parcel; new ETA {eta2}.",
        "Update for {order}:\n- Status: located by {carrier}\n- New ETA: {eta2}",
    ],
    "order_arrived": [
        "{order} turned up today!",
        "got it, {order} delivered this morning",
    ],
    "order_closed": [
        "Brilliant. {order} marked as delivered; {ticket} closed.",
        "Case closed for {order}.",
    ],
    "order_lost": [
        "{order} went missing: {carrier} couldn't find it. We can refund {total} or ship a new "
        "one. What do you prefer?",
        "Update for {order}:\n- Status: lost by {carrier}\n- Options: refund or replacement",
    ],
    "choose_refund": [
        "refund pls",
        "Just give me my money back.",
    ],
    "order_refunded": [
        "Refund processed for {order}:\n- Amount: {refund}\n- Reference: {refund_ref}\n- "
        "Date: {refunded_on}",
        "{refund_ref}: {refund} reimbursed to your card on {refunded_on} for {order}.",
    ],
    "choose_replacement": [
        "new one pls",
        "I'd like a replacement.",
    ],
    "replacement_shipped": [
        "Replacement for {order}:\n- New order: {new_order}\n- Tracking: {new_tracking} "
        "({carrier})\n- ETA: {new_eta}",
        "{new_order} (replacement) is in transit with {carrier}, tracking {new_tracking}, ETA "
        "{new_eta}.",
    ],
    "replacement_arrived": [
        "replacement {new_order} is here, all good",
        "The new one ({new_order}) was delivered.",
    ],
    "replacement_closed": [
        "Closing {order} and {new_order}.",
        "{order} and its replacement {new_order} are complete.",
    ],
    "return_request": [
        "want to send back {order} ({product}), paid {paid}, got it {bought}",
        "Return request\nOrder: {order}\nPurchased: {bought}\nPrice: {paid}",
    ],
    "return_authorised": [
        "Return for {order} accepted:\n- RMA: {rma}\n- Refund after inspection: {refund}",
        "{rma} is the authorisation for returning {order}; refund will be {refund}.",
    ],
    "return_sent": [
        "sent it back",
        "Returned it via the post office today.",
    ],
    "return_refunded": [
        "Return {rma} inspected. {refund} refunded on {refunded_on} for {order} ({refund_ref}).",
        "Refund for {order}:\n- Amount: {refund}\n- Reference: {refund_ref}\n- Processed: "
        "{refunded_on}",
    ],
    "return_ping": [
        "{rma} - received yet?",
        "Have you got my return for {order} yet?",
    ],
    "device_problem": [
        "{product} broken: {error}, serial {serial}",
        "Device: {product}\nSerial: {serial}\nError: {error}",
    ],
    "ticket_opened": [
        "{ticket} created for your {product} (serial {serial}).",
        "Support ticket:\n- Number: {ticket}\n- Device serial: {serial}",
    ],
    "ticket_ping": [
        "{ticket}?",
        "any news on {ticket}",
    ],
    "visit_booked": [
        "{ticket} moved to our field engineers. Visit: {visit}. Booking ref: {booking}.",
        "Technician appointment for {ticket}:\n- Date: {visit}\n- Booking: {booking}",
    ],
    "visit_done": [
        "engineer sorted it, thanks",
        "The repair visit fixed the problem.",
    ],
    "ticket_resolved": [
        "{ticket} marked as solved.",
        "Closing {ticket}, glad it's sorted.",
    ],
    "invoice_wrong": [
        "{invoice} is wrong, you charged {billed} instead of {correct}",
        "Invoice: {invoice}\nCharged: {billed}\nShould be: {correct}",
    ],
    "invoice_review": [
        "{invoice} sent to billing for a check.",
        "Billing will review {invoice}.",
    ],
    "invoice_corrected": [
        "Correction for {invoice}:\n- Credit note: {credit_note}\n- Credit: {credit}\n- New due "
        "date: {due}",
        "{credit_note} credits {credit} on {invoice}; pay the rest by {due}.",
    ],
    "invoice_ping": [
        "{invoice}?",
        "update on {invoice}?",
    ],
    "invoice_paid": [
        "paid {invoice}",
        "Payment for {invoice} sent.",
    ],
    "invoice_closed": [
        "{invoice}: payment received, all settled.",
        "{invoice} is fully paid now.",
    ],
    "claim_open": [
        "my {product} died. serial {serial}, bought {bought}, cost {price}. warranty?",
        "Warranty request\nProduct: {product}\nSerial: {serial}\nBought: {bought}\nPrice: {price}",
    ],
    "claim_registered": [
        "Warranty claim:\n- Number: {claim}\n- Serial: {serial}\n- Status: registered",
        "{claim} opened for {product} serial {serial}.",
    ],
    "claim_ping": [
        "{claim}??",
        "any news on {claim}",
    ],
    "claim_parts": [
        "{claim}: part on back-order, expected {parts_eta}.",
        "Claim update:\n- Claim: {claim}\n- Waiting for: spare part\n- Expected: {parts_eta}",
    ],
    "claim_parts_delay": [
        "{claim}: supplier pushed the part to {parts_eta2}.",
        "Claim update:\n- Claim: {claim}\n- Part now expected: {parts_eta2}",
    ],
    "claim_repair": [
        "{claim}: repair appointment {repair}.",
        "Claim update:\n- Claim: {claim}\n- Repair date: {repair}",
    ],
    "claim_nothing_new": [
        "{claim}: no change yet.",
        "Nothing new on {claim}.",
    ],
    "plan_change": [
        "switch me to {plan} pls",
        "Plan change request: {plan}.",
    ],
    "plan_changed": [
        "Subscription change:\n- Subscription: {subscription}\n- Plan: {plan}\n- Price: {price} "
        "per month\n- Starts: {starts}",
        "{subscription} is on {plan} now: {price}/month from {starts}.",
    ],
}

# A fourth tuning set: formal and wordy, cases named by their item as often as by number,
# identifiers introduced as "reference" or "number", the verb far from the identifier.
DEV4_EVENTS: Templates = {
    "intro": [
        "Good afternoon. I am writing on behalf of myself, {name}; my customer reference is "
        "{customer_no} and correspondence should go to {email}.",
        "Dear support team, my name is {name}. For your records: customer reference "
        "{customer_no}, email address {email}.",
    ],
    "intro_ack": [
        "Good afternoon {first}, thank you for the details; I have located your account.",
        "Dear {first}, thank you. I have your customer record in front of me.",
    ],
    "phone": [
        "Should a telephone call be more convenient, I may be reached on {phone}.",
        "Please note my telephone number, {phone}, for the delivery company.",
    ],
    "phone_ack": [
        "Thank you; the telephone number {phone} has been recorded on your account.",
        "Understood, {phone} is now your preferred contact number.",
    ],
    "order_problem": [
        "I should like to enquire about the {product} which I ordered on {ordered} at a cost "
        "of {total}; the order reference is {order}, and it has not yet reached me.",
        "Regarding the {product}: I placed the order, number {order}, on {ordered} and paid "
        "{total}, yet I have received nothing.",
    ],
    "order_shipped": [
        "The {product} left our warehouse with {carrier}; its tracking reference is {tracking}, "
        "and {carrier} expects to deliver it on {eta}.",
        "I can confirm that order {order} has been despatched. The consignment number with "
        "{carrier} is {tracking}, with delivery anticipated on {eta}.",
    ],
    "order_late": [
        "I regret to say that the {product} has still not arrived, and the tracking has not "
        "changed.",
        "The consignment for order {order} appears to have stalled in transit.",
    ],
    "carrier_ticket": [
        "I have asked {carrier} to trace the consignment; the reference for that enquiry is "
        "{ticket}, and it concerns order {order}.",
        "Please accept my apologies. An enquiry, number {ticket}, has been lodged with {carrier} "
        "regarding order {order}.",
    ],
    "order_ping": [
        "May I ask whether there is any news regarding the {product}?",
        "Is there any further information on order {order}?",
    ],
    "eta_update": [
        "{carrier} has now located the consignment for order {order}; the revised delivery "
        "date is {eta2}.",
        "I am pleased to say the {product} has been found by {carrier}, who now expect to "
        "deliver it on {eta2}.",
    ],
    "order_arrived": [
        "I am pleased to report that the {product} has been delivered.",
        "The {product} from order {order} arrived safely this morning.",
    ],
    "order_closed": [
        "Thank you for letting me know; order {order} is now complete and the enquiry {ticket} "
        "has been closed.",
        "Excellent. I have closed enquiry {ticket} and marked order {order} as delivered.",
    ],
    "order_lost": [
        "I am sorry to inform you that {carrier} has declared the consignment for order {order} "
        "lost. We can refund {total} or despatch a replacement; please let me know which you "
        "would prefer.",
        "Regrettably the {product} (order {order}) cannot be found by {carrier}. Would you "
        "prefer a refund or a replacement?",
    ],
    "choose_refund": [
        "On reflection I would prefer a refund.",
        "A refund would suit me best, thank you.",
    ],
    "order_refunded": [
        "A refund of {refund} has been made for order {order} on {refunded_on}; its reference "
        "is {refund_ref}.",
        "I have arranged the refund for the {product}: {refund}, paid on {refunded_on} under "
        "reference {refund_ref}, against order {order}.",
    ],
    "choose_replacement": [
        "I would prefer a replacement, please.",
        "Kindly send a replacement {product}.",
    ],
    "replacement_shipped": [
        "A replacement has been despatched under order number {new_order}; the {carrier} "
        "consignment number is {new_tracking} and delivery is expected on {new_eta}.",
        "The replacement {product}, order {new_order}, is with {carrier} (consignment "
        "{new_tracking}) and should be delivered on {new_eta}.",
    ],
    "replacement_arrived": [
        "The replacement {product} has been delivered, thank you.",
        "Replacement order {new_order} reached me yesterday.",
    ],
    "replacement_closed": [
        "I have now closed order {order} together with its replacement, {new_order}.",
        "Thank you; order {order} and replacement {new_order} are both complete.",
    ],
    "return_request": [
        "I wish to return the {product}, purchased on {bought} for {paid} under order {order}.",
        "Regarding order {order}: I should like to return the {product}, for which I paid "
        "{paid} on {bought}.",
    ],
    "return_authorised": [
        "The return of the {product} has been approved; your returns authorisation number is "
        "{rma}, and {refund} will be refunded upon receipt.",
        "I have authorised the return under reference {rma}. Upon inspection we shall refund "
        "{refund}.",
    ],
    "return_sent": [
        "I have posted the {product} back to you.",
        "The parcel has been returned as instructed.",
    ],
    "return_refunded": [
        "Your return, reference {rma}, has been received, and the refund of {refund} for order "
        "{order} was made on {refunded_on} (reference {refund_ref}).",
        "We received the {product}; accordingly {refund} was refunded on {refunded_on} against "
        "order {order}, reference {refund_ref}.",
    ],
    "return_ping": [
        "Has the returned {product} been received?",
        "I should be grateful for an update on return {rma}.",
    ],
    "device_problem": [
        "I regret to report that the {product} displays error {error} on start-up; its serial "
        "number is {serial}.",
        "The {product}, serial number {serial}, has developed a fault and shows {error}.",
    ],
    "ticket_opened": [
        "I have raised support case {ticket} concerning the {product} with serial number {serial}.",
        "A support ticket has been opened for the {product} (serial {serial}); its number is "
        "{ticket}.",
    ],
    "ticket_ping": [
        "Might there be any progress on the {product}?",
        "May I have an update on case {ticket}?",
    ],
    "visit_booked": [
        "Case {ticket} has been referred to our engineers, and a visit has been arranged for "
        "{visit}; the appointment reference is {booking}.",
        "An engineer will attend on {visit} regarding case {ticket}. Please quote appointment "
        "reference {booking}.",
    ],
    "visit_done": [
        "The engineer attended and the {product} now functions correctly.",
        "I am glad to say the repair was successful.",
    ],
    "ticket_resolved": [
        "Thank you for confirming; case {ticket} is now resolved.",
        "I have closed case {ticket} as resolved.",
    ],
    "invoice_wrong": [
        "I believe invoice {invoice} to be incorrect: it shows {billed}, whereas my plan costs "
        "{correct}.",
        "Having reviewed invoice {invoice}, I note a charge of {billed} rather than the agreed "
        "{correct}.",
    ],
    "invoice_review": [
        "I have referred invoice {invoice} to our accounts department for review.",
        "Our billing team is examining invoice {invoice}.",
    ],
    "invoice_corrected": [
        "Accounts have confirmed the error. A credit note, number {credit_note}, for {credit} "
        "has been issued against invoice {invoice}, and payment is now due by {due}.",
        "Invoice {invoice} has been corrected by credit note {credit_note} in the amount of "
        "{credit}; the revised due date is {due}.",
    ],
    "invoice_ping": [
        "Has the accounts department reached a conclusion on invoice {invoice}?",
        "I would welcome an update on the invoice.",
    ],
    "invoice_paid": [
        "I have today paid the corrected balance of invoice {invoice}.",
        "Payment of invoice {invoice} has been made.",
    ],
    "invoice_closed": [
        "Thank you; invoice {invoice} is now settled in full.",
        "I can confirm receipt of payment; invoice {invoice} is closed.",
    ],
    "claim_open": [
        "I must also raise a warranty matter: the {product}, bought on {bought} for {price}, "
        "serial number {serial}, has ceased to function.",
        "The {product} I purchased on {bought} (price {price}; serial number {serial}) has "
        "failed, and I believe it remains under warranty.",
    ],
    "claim_registered": [
        "I have registered a warranty claim, number {claim}, for the {product} with serial "
        "number {serial}.",
        "Your warranty claim has been accepted under reference {claim} (serial {serial}).",
    ],
    "claim_ping": [
        "Might I have an update on warranty claim {claim}?",
        "Is there any news on the repair of the {product}?",
    ],
    "claim_parts": [
        "The repair centre has assessed claim {claim}; a spare part is required and is expected "
        "on {parts_eta}.",
        "Regarding warranty claim {claim}: the necessary part is on order, with delivery "
        "expected on {parts_eta}.",
    ],
    "claim_parts_delay": [
        "I regret that the part for claim {claim} has been delayed; it is now expected on "
        "{parts_eta2}.",
        "The supplier has revised the delivery of the part for warranty claim {claim} to "
        "{parts_eta2}.",
    ],
    "claim_repair": [
        "The part for claim {claim} has arrived and the repair has been scheduled for {repair}.",
        "I am pleased to say the repair under warranty claim {claim} will take place on {repair}.",
    ],
    "claim_nothing_new": [
        "There is as yet no further news on claim {claim}.",
        "Claim {claim} remains with the repair centre; I shall write as soon as I hear more.",
    ],
    "plan_change": [
        "I should like to change my subscription to the {plan} plan.",
        "Would you kindly move my subscription to {plan}?",
    ],
    "plan_changed": [
        "Your subscription, reference {subscription}, has been changed to the {plan} plan at "
        "{price} per month with effect from {starts}.",
        "With effect from {starts}, subscription {subscription} will be on the {plan} plan, "
        "costing {price} per month.",
    ],
}

# A second held-out set, written after the embedded summarizer was frozen (no tuning run has
# used it): an agent who writes in shorthand and arrows, a customer who refers back loosely.
HELDOUT2_EVENTS: Templates = {
    "intro": [
        "hiya, it's {name} here. acct no {customer_no}, mail {email}. got a few things to sort",
        "{name} (customer no. {customer_no}) — please use {email} for anything written.",
    ],
    "intro_ack": [
        "Hey {first} 👋 found you ({customer_no}). Fire away.",
        "Hi {first}, account located. What's first?",
    ],
    "phone": [
        "oh and my number changed, it's {phone} now",
        "Best to ring {phone} if the driver is lost.",
    ],
    "phone_ack": [
        "Updated → {phone}.",
        "Got it, new number {phone} saved.",
    ],
    "order_problem": [
        "the {product} I ordered ({order}) never came. ordered {ordered}, charged {total}",
        "Still no sign of my {product} — ref {order}, bought on {ordered}, {total} taken from my "
        "card.",
    ],
    "order_shipped": [
        "Checked {order} → out with {carrier} (tracking {tracking}), due {eta}.",
        "{carrier} has it. Tracking ref: {tracking}. They say {eta}.",
    ],
    "order_late": [
        "tracking for {order} still says 'in depot' 😩",
        "Day three of no updates on {order}.",
    ],
    "carrier_ticket": [
        "Logged a trace with {carrier} for {order} → ref {ticket}.",
        "I've chased {carrier}; their case ref is {ticket} (re {order}).",
    ],
    "order_ping": [
        "{order} any news?",
        "hey, anything on {order}?",
    ],
    "eta_update": [
        "{order}: {carrier} found it at the hub → now due {eta2}.",
        "Good-ish news: {carrier} located {order}; new ETA {eta2}.",
    ],
    "order_arrived": [
        "{order} showed up finally 🙌",
        "it arrived! {order} sorted",
    ],
    "order_closed": [
        "Brilliant → {order} done, {ticket} closed ✅",
        "Lovely, closing {ticket} and {order}.",
    ],
    "order_lost": [
        "{carrier} have given up: {order} is lost 😞 → refund ({total}) or a new one?",
        "Bad news on {order}: confirmed lost by {carrier}. Your call: money back or replacement?",
    ],
    "choose_refund": [
        "money back pls",
        "Refund it, thanks.",
    ],
    "order_refunded": [
        "Refund done ✅ {refund} back to your card for {order} (ref {refund_ref}, {refunded_on}).",
        "{order}: refunded {refund} on {refunded_on} → ref {refund_ref}.",
    ],
    "choose_replacement": [
        "new one pls, I still need it",
        "Replacement would be great.",
    ],
    "replacement_shipped": [
        "Replacement on its way → {new_order}, {carrier} tracking {new_tracking}, due {new_eta}.",
        "Sent a new one under {new_order} ({carrier} ref {new_tracking}), ETA {new_eta}.",
    ],
    "replacement_arrived": [
        "the new one came ({new_order}) 👍",
        "Replacement {new_order} delivered, thanks.",
    ],
    "replacement_closed": [
        "Great → {order} + {new_order} closed ✅",
        "Closing out {order} and {new_order}.",
    ],
    "return_request": [
        "can I send the {product} back? {order}, paid {paid}, came on {bought}",
        "Return please: {order} ({product}), {paid}, received {bought}.",
    ],
    "return_authorised": [
        "Return OK'd → {rma}. You'll get {refund} once it's back with us.",
        "RMA {rma} issued for {order}; {refund} will be refunded after checks.",
    ],
    "return_sent": [
        "posted it back today",
        "Return's in the post.",
    ],
    "return_refunded": [
        "{rma} received ✅ → {refund} refunded for {order} on {refunded_on}, ref {refund_ref}.",
        "Refunded: {refund} / {order} / {refunded_on} / ref {refund_ref}.",
    ],
    "return_ping": [
        "did {rma} arrive?",
        "Any update on the return of {order}?",
    ],
    "device_problem": [
        "my {product} is throwing {error} again, serial {serial}",
        "{product} dead. Error {error}. S/N {serial}.",
    ],
    "ticket_opened": [
        "Opened {ticket} for the {product} (S/N {serial}).",
        "Ticket {ticket} raised → device {serial}.",
    ],
    "ticket_ping": [
        "{ticket} any progress?",
        "still broken, {ticket}",
    ],
    "visit_booked": [
        "{ticket} → engineer visit booked for {visit}, ref {booking}.",
        "Escalated {ticket}; tech comes {visit} (booking {booking}).",
    ],
    "visit_done": [
        "engineer fixed it 👍",
        "All working after the visit.",
    ],
    "ticket_resolved": [
        "Closing {ticket} ✅",
        "{ticket} resolved.",
    ],
    "invoice_wrong": [
        "{invoice} says {billed}?? my plan's {correct}",
        "Overcharged on {invoice}: {billed} vs {correct}.",
    ],
    "invoice_review": [
        "Flagged {invoice} to billing.",
        "Billing are looking at {invoice}.",
    ],
    "invoice_corrected": [
        "{invoice} fixed → credit note {credit_note} for {credit}, pay by {due}.",
        "Credit {credit_note} ({credit}) applied to {invoice}; new due date {due}.",
    ],
    "invoice_ping": [
        "{invoice} sorted yet?",
        "Any word on {invoice}?",
    ],
    "invoice_paid": [
        "paid {invoice} 👍",
        "{invoice} paid today.",
    ],
    "invoice_closed": [
        "{invoice} → paid, all square ✅",
        "Thanks, {invoice} is settled.",
    ],
    "claim_open": [
        "my {product} broke, bought {bought} for {price}, serial {serial}. still under warranty?",
        "Warranty: {product} / S/N {serial} / bought {bought} / {price}. It's stopped working.",
    ],
    "claim_registered": [
        "Warranty claim {claim} logged for S/N {serial}.",
        "Claim ref {claim} opened ({product}, S/N {serial}).",
    ],
    "claim_ping": [
        "{claim} news?",
        "how's {claim} going?",
    ],
    "claim_parts": [
        "{claim}: needs a part → ETA {parts_eta}.",
        "Part ordered for {claim}, expected {parts_eta}.",
    ],
    "claim_parts_delay": [
        "{claim}: part slipped → {parts_eta2} now.",
        "Supplier delay on {claim}; part now {parts_eta2}.",
    ],
    "claim_repair": [
        "{claim}: repair booked for {repair} ✅",
        "Repair for {claim} set for {repair}.",
    ],
    "claim_nothing_new": [
        "{claim}: nothing new yet.",
        "No change on {claim}, sorry.",
    ],
    "plan_change": [
        "can you put me on {plan}?",
        "Switch me to {plan} please.",
    ],
    "plan_changed": [
        "Done → {subscription} on {plan}, {price}/mo from {starts}.",
        "{subscription} switched to {plan} ({price} a month) starting {starts}.",
    ],
}

HELDOUT2_SMALL_TALK: list[str] = [
    "thx!",
    "ok cool",
    "sorry, was on a call",
    "haha fair",
    "brb, door",
    "right, makes sense",
    "is the shop open on bank holidays btw?",
    "my sister bought the same lamp, loves it",
    "ugh, Mondays",
    "k, will wait",
]

HELDOUT2_ACKS: list[str] = ["Sure!", "On it.", "Yep.", "No problem.", "Hmm, let me look."]

DEV_SMALL_TALK: list[str] = [
    "Thanks, that's helpful. Sorry, the dog is barking at the postman again.",
    "Okay. It's been one of those weeks, honestly, nothing seems to go right.",
    "Right, I see. I tried to figure it out myself first but gave up after a while.",
    "Sorry, my internet is a bit slow today, so I might take a moment to answer.",
    "Appreciate it. By the way, the weather here has been awful all week.",
    "Good to know. My neighbour had the same trouble last year, funnily enough.",
    "Thanks for explaining. I'm not very technical, so bear with me.",
    "Alright. I'm making tea while we talk, so if I go quiet that's why.",
    "That makes sense. I was worried it would be a bigger problem than that.",
    "Okay, understood. I'll keep an eye on my inbox.",
    "Thank you, you've been very patient with me today.",
    "I see. Do you happen to know if your shop is open on public holidays?",
    "Fine. My partner says hello, by the way; they're the one who wanted the furniture.",
    "Oh, and one unrelated question: do you still sell the oak bookshelves?",
    "Hmm, okay. I'll think about it and let you know.",
    "Cool. Is there a loyalty programme or something similar?",
]

HELDOUT_SMALL_TALK: list[str] = [
    "Cheers. The kids are home sick so I'm typing with one hand.",
    "Noted. I'm on a train, so the connection may drop.",
    "Ha, fair enough. I've been on hold with three companies this week.",
    "Interesting. Do you ship to Norway as well, out of curiosity?",
    "Right-o. I'll check with my flatmate whether that suits.",
    "Mm, fine. Is your warehouse the one near the motorway?",
    "Understood, thanks a lot for being so thorough.",
    "Sure. Do you have a newsletter? I keep missing the sales.",
    "OK, I'll wait. Quick question, do gift cards expire?",
    "Lovely, thank you. My cat just walked over the keyboard, sorry if anything odd appears.",
    "Alright, makes sense. I'll be travelling next month, so timing matters a bit.",
    "Right. Can I pay with bank transfer next time?",
]

DEV_PARAGRAPHS: list[str] = [
    "Just so you know how this usually works: once a parcel leaves our warehouse, the carrier "
    "scans it at every depot, and the tracking page updates within a few hours of each scan. "
    "If there is no new scan for more than {days} working days, we ask the carrier to trace "
    "it, which is exactly what happens in cases like this one. Most traced parcels turn up "
    "within a week; they are usually mis-sorted rather than gone.",
    "Our returns policy gives you {days} days from delivery to send an item back, as long as "
    "it is unused and in its original packaging. We email a prepaid label, so the return "
    "itself costs you nothing, and the refund goes back to the original payment method once "
    "the warehouse has inspected the item. Large furniture is collected by a courier instead "
    "of being dropped at a post office.",
    "Regarding payments: refunds to credit cards usually appear within 5 to 7 working days, "
    "but some banks take longer to show them as a separate line. PayPal refunds are faster, "
    "typically within a day. If a refund has not appeared after 10 working days, send us a "
    "screenshot of the statement and we will ask our payment provider to check it.",
    "A little background on our technical support: first-line agents like me can run remote "
    "diagnostics, reset devices and replace accessories. When a fault needs hands-on work, "
    "the case goes to our field team, who book a technician visit. Visits are usually "
    "available within {days} working days, and you get a reminder by text the day before.",
    "On warranties: every product comes with a two-year manufacturer warranty, and our own "
    "extended cover adds a third year for items over {threshold}. Repairs under warranty are "
    "free, including parts and labour. If a repair is not possible, we replace the item with "
    "the same or an equivalent model. Keep your receipt or order confirmation handy.",
    "About invoices in general: we issue them on the first working day of each month, and "
    "payment is due within 14 days. If an invoice is wrong, we never ask you to pay the wrong "
    "amount first; billing issues a credit note for the difference instead, and the due date "
    "is moved so you have time to pay the corrected balance.",
    "For what it's worth, deliveries to your area usually go through our regional hub, which "
    "handles around {volume} parcels a day. During sales weeks the volume doubles and delays "
    "of a day or two are common. Our help centre article KB-{kb} has a map of the hubs and "
    "the typical delivery times from each of them.",
    "If you ever need to reach us outside chat hours, our phone line is open Monday to Friday "
    "from 8 to 18, and on Saturdays until noon. Emails are answered within one working day. "
    "Whichever way you contact us, the whole history of your cases is visible to every agent, "
    "so you won't need to repeat yourself.",
    "A quick note on shipping costs: orders over {threshold} ship for free, and smaller orders "
    "pay a flat fee. Express delivery is available for most items at an extra charge, but not "
    "for bulky furniture, which always goes by our two-person delivery service. Delivery "
    "slots for those can be chosen on the carrier's website once the item has shipped.",
    "I'd also suggest keeping the original packaging for a few weeks. It makes returns and "
    "warranty repairs much easier, because the carrier accepts the item without extra "
    "wrapping. If you've already thrown it away, that's fine too; we can send a box, it just "
    "takes a couple of extra days.",
    "On the device side, most faults of that kind come from a firmware glitch rather than a "
    "hardware problem. Version {version} fixed several of them, so it's worth checking that "
    "the device is up to date. If the fault persists after an update and a reset, a "
    "technician needs to look at it, and that's usually a quick job.",
    "Subscriptions can be changed at any time; the new price applies from the next billing "
    "date, and we never charge twice for the same month. If you downgrade, the features of "
    "your current plan stay available until the end of the period you've already paid for. "
    "Upgrades take effect immediately and the difference is prorated.",
    "I also want to apologise for the back and forth. We're working on making our tracking "
    "and case updates more proactive, so that you hear from us before you have to ask. "
    "Feedback like yours genuinely helps with that, and I'll pass it on to the team that "
    "handles our carrier relationships.",
    "Just to set expectations: when a carrier investigation is open, we are not allowed to "
    "resend the item until they confirm the outcome, because otherwise two parcels could end "
    "up at your door. The investigation normally takes up to {days} working days. As soon as "
    "it ends, I'll update you with the options.",
    "For larger items, our two-person delivery team will call about 30 minutes before they "
    "arrive. They carry the item to the room of your choice and can take the packaging away "
    "with them. Assembly is available for a small fee if you book it at least two days in "
    "advance; most desks and wardrobes take about an hour.",
    "In case it helps, you can see all your orders, returns and open cases in your account "
    "under 'My orders'. Each entry shows the latest status and any documents, such as "
    "invoices, credit notes and return labels. It's the same information I see, just without "
    "the internal notes.",
    "Some general care advice, since you mentioned the new furniture: solid wood reacts to "
    "humidity, so keep it away from radiators and direct sunlight for the first weeks. Small "
    "gaps between boards in winter are normal and close again in summer. Clean with a damp "
    "cloth only; household sprays with alcohol can dull the oil finish over time.",
    "If a delivery slot doesn't suit you, you can move it up to 24 hours before the start of "
    "the slot on the carrier's page, or ask us to do it for you. Missed deliveries are "
    "attempted once more the next working day, after which the parcel waits at a pick-up "
    "point for {days} days before it is sent back to us.",
    "About compensation in general: when a delay is clearly our fault, we can offer a voucher "
    "or waive the delivery fee, and for long delays on urgent items a partial refund is "
    "possible too. That's decided case by case by the team lead, so I can't promise anything "
    "in advance, but I'm happy to ask once the current issue is settled.",
    "For appliances, the most common issues in the first months are blocked filters and "
    "loose water connections, and both are easy to check. The quick-start guide has a "
    "troubleshooting table on the last page, and our video channel shows each step. None of "
    "that replaces a proper repair when something is actually broken, of course.",
    "Our data protection team asked me to mention that we only keep your contact details for "
    "as long as there is an open order or case, plus the legal retention period for invoices. "
    "You can download everything we store about you from your account settings, and ask us "
    "to correct or delete it at any time.",
    "On price changes: if an item you bought drops in price within {days} days of your order, "
    "we refund the difference on request. This doesn't apply to clearance items or to "
    "bundles, and it's one refund per item, but it's worth keeping in mind during sales.",
]

HELDOUT_PARAGRAPHS: list[str] = [
    "A word on how traces work with couriers: we file the request, the courier searches its "
    "depots and sorting belts, and we get a written answer. It normally takes {days} working "
    "days. We can't speed that up, but I'll follow it daily, and you'll get a message the "
    "moment something comes back from them.",
    "Refunds land on the card or account you paid with. Banks differ a lot in how fast they "
    "show them; some list the money as pending for days before it appears. If it still isn't "
    "visible after two weeks, a bank statement screenshot lets our finance team chase it "
    "directly with the payment processor.",
    "For context, the service centre handles repairs for all of our brands. They test every "
    "unit after a repair and send a short report with it. Turnaround depends mostly on parts: "
    "common components are in stock, while motors and control boards sometimes come from the "
    "manufacturer, which adds a few weeks.",
    "The general rule for sending things back is {days} days from the day it reached you, "
    "unused, with its packaging. Bulky pieces get picked up by a courier at a time you book; "
    "small items go through any post office with our prepaid label. Opened mattresses and "
    "custom-made pieces are excluded, for hygiene and production reasons.",
    "Billing runs on a monthly cycle. If something on an invoice looks wrong, don't pay the "
    "disputed part; accounts will look at it and either confirm the amount or send a "
    "correction. Interest or reminders are paused while a query is open, so there's no risk "
    "in waiting for the answer.",
    "Engineers' visits are planned in half-day windows, and they ring ahead. Most fixes happen "
    "on the spot, since the van carries the usual spares. If a part is missing, they order it "
    "and a second visit is booked automatically, at no extra cost to you while the unit is "
    "covered.",
    "Our couriers move about {volume} parcels through the regional centre daily, more in "
    "December. Help article KB-{kb} lists the cut-off times for next-day delivery per region "
    "and explains what each tracking status means, in case the wording on the courier page "
    "is confusing.",
    "Shipping is free above {threshold}; under that there's a small fixed charge. Bulky goods "
    "always travel with our own two-person crew rather than a parcel service, which is why "
    "their tracking looks different from an ordinary parcel's. Crews can also take away the "
    "old piece for recycling.",
    "Firmware {version} addressed a number of start-up faults, so an update is usually the "
    "first step. After that, a factory reset clears most remaining issues. Hardware faults are "
    "rarer than people think, but when they happen the service centre deals with them under "
    "the warranty.",
    "About the extended cover: anything above {threshold} gets a third year on top of the "
    "legal two. Parts, labour and transport are included. If a repair can't be done, you get "
    "a like-for-like replacement or, if that model is gone, a credit for the full purchase "
    "price.",
    "Plan changes take effect on the next cycle unless it's an upgrade, which is immediate and "
    "prorated. You can switch as often as you like; there are no fees for moving between "
    "tiers, and your history and settings stay exactly as they are.",
    "I realise this has taken longer than it should. We're reviewing how our partners report "
    "delays, because you shouldn't have to chase us. I've added a note to your file so any "
    "colleague who picks this up knows the whole story without asking you again.",
    "Everything we discuss is visible in your customer area too: orders, cases, return "
    "labels, invoices and credit notes, each with its current state. Notifications can be "
    "switched to text messages in the settings if email is inconvenient.",
    "Our opening hours: chat and phone from 8 to 18 on weekdays, Saturday mornings for urgent "
    "deliveries. Outside those hours, messages are queued and the first agent in the morning "
    "answers them, usually before nine.",
    "Wooden pieces move a little with the seasons. Keep them out of direct sun and away from "
    "heaters for the first month, wipe them with a slightly damp cloth, and skip anything "
    "with alcohol in it. Hairline gaps in winter are expected and close up again later.",
    "If we're clearly at fault for a delay, team leads can approve goodwill gestures, such as "
    "a voucher or a waived fee, occasionally more for urgent items. It's a judgement call "
    "made after the main problem is fixed, so I'd rather not promise anything yet.",
    "Rescheduling a delivery is possible until the day before on the courier's website. "
    "If nobody's home, they try once more and then leave it at a pick-up point for {days} "
    "days. After that it comes back to our warehouse and we get in touch to arrange another "
    "attempt.",
    "Most appliance problems in the first months turn out to be a clogged filter or a hose "
    "that isn't seated properly. The manual's last page has a checklist, and there are short "
    "videos on our site. If those don't help, the unit needs a technician, which is free "
    "while it's covered.",
    "Privacy note: contact details are kept while you have open orders or cases, and invoices "
    "for the period the law requires. Your account page lets you export your data or ask "
    "for corrections and deletion whenever you like.",
    "Price protection: if something you ordered gets cheaper within {days} days, ask us and "
    "we'll refund the difference. Clearance stock and bundles are excluded, and it applies "
    "once per item.",
]

DEV_ACKS: list[str] = [
    "Of course, happy to help with that.",
    "Thanks for your patience.",
    "Sure thing, let me take a look.",
    "I understand, let me explain.",
    "Good question.",
    "Thanks for letting me know.",
]

HELDOUT_ACKS: list[str] = [
    "Right, here's the situation.",
    "No worries at all.",
    "Let me walk you through it.",
    "Fair point.",
    "Sure.",
]

# A long answer or a rant: what makes real turns long without adding facts.
DEV_RANTS: list[str] = [
    "I have to say the whole experience has been frustrating. I ordered early precisely so I "
    "wouldn't have to worry about it, I planned my week around the delivery, I took a day "
    "off, and then nothing happened. I know it's not your fault personally, but it would "
    "have been nice to get an email instead of finding out by checking the website myself.",
    "Let me explain the background, because it matters: we're moving flat in a few weeks, so "
    "everything has to be sorted before then. The new place is on the fourth floor without a "
    "lift, which is why I care so much about the delivery team carrying things up.",
    "I don't want to sound ungrateful, you've been helpful, but I've spent more time on this "
    "than I'd like. Between work, the kids' school runs and the renovation at home, every "
    "hour counts at the moment, and having to explain things twice really adds up.",
    "Also, a bit of feedback: your website's order page is confusing. It shows one status on "
    "the overview and another one in the details, and the tracking link opens the wrong "
    "carrier half the time. Maybe pass that on to whoever looks after it.",
]

HELDOUT_RANTS: list[str] = [
    "To be honest I've had better weeks. Work is chaotic, the landlord is slow to fix the "
    "heating, and now this. I'm not blaming you, I just want one thing on my list to be "
    "simple for a change, and I'd appreciate it if someone could keep me posted without me "
    "having to chase.",
    "Some context: my parents are visiting soon and half the living room is still in boxes. "
    "I'd like to get everything settled before they come, so timing is the main thing for "
    "me, even more than the money.",
    "Honestly, I've lost count of how many emails I've written about all this. I understand "
    "things go wrong, but each time it's a new person and I start from scratch. At least in "
    "this chat the history stays in one place, which helps.",
    "One suggestion while I have you: the app logs me out every other day and the order "
    "history takes ages to load on my phone. Not your department, I'm sure, but somebody "
    "should know.",
]


@dataclass(frozen=True)
class Phrasing:
    """One set of phrasings: events by name (each a list of variants) and the filler."""

    events: Templates
    small_talk: list[str]
    paragraphs: list[str]
    acks: list[str]
    rants: list[str]


PHRASINGS: dict[str, Phrasing] = {
    "dev": Phrasing(DEV_EVENTS, DEV_SMALL_TALK, DEV_PARAGRAPHS, DEV_ACKS, DEV_RANTS),
    "dev2": Phrasing(DEV2_EVENTS, DEV_SMALL_TALK, DEV_PARAGRAPHS, DEV_ACKS, DEV_RANTS),
    "dev3": Phrasing(DEV3_EVENTS, DEV_SMALL_TALK, DEV_PARAGRAPHS, DEV_ACKS, DEV_RANTS),
    "dev4": Phrasing(DEV4_EVENTS, DEV_SMALL_TALK, DEV_PARAGRAPHS, DEV_ACKS, DEV_RANTS),
    "heldout": Phrasing(
        HELDOUT_EVENTS, HELDOUT_SMALL_TALK, HELDOUT_PARAGRAPHS, HELDOUT_ACKS, HELDOUT_RANTS
    ),
    "heldout2": Phrasing(
        HELDOUT2_EVENTS, HELDOUT2_SMALL_TALK, HELDOUT_PARAGRAPHS, HELDOUT2_ACKS, HELDOUT_RANTS
    ),
}
